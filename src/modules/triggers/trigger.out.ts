/**
 * The Out mappers of triggers and trigger executions: the API shape of a row, shared by the
 * triggers routes and the webhook trigger receiver (src/modules/inbound).
 */
import type { Config } from '../../config';
import type { z } from '../../http/zod';
import { openSecret, sealedAt } from '../../secrets';
import type { Trigger } from './trigger.entity';
import type { TriggerExecutionDetailOut, TriggerExecutionOut, TriggerRecordOut } from './trigger.schemas';
import type { ExecutionRow } from './trigger.service';
import { ALREADY_RUNNING, QUEUE_FULL } from './trigger-firing';

/** The webhook secret (stored sealed: src/secrets.ts) is shown on create, get and update, never in list items. */
export function toTriggerOut(t: Trigger, config: Config, opts: { withSecret: boolean } = { withSecret: true }): z.output<typeof TriggerRecordOut> {
  const configuration = { ...t.configuration };
  if (!opts.withSecret) delete configuration.secret;
  else if (typeof configuration.secret === 'string') configuration.secret = openSecret(config, configuration.secret, sealedAt.triggerSecret(t.id));
  return {
    id: t.id,
    name: t.name,
    type: t.type,
    status: t.status,
    workflow_id: t.workflowId,
    channel: t.channel as z.output<typeof TriggerRecordOut>['channel'],
    configuration,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
    execution_count: t.executionCount,
    last_triggered: t.lastTriggered?.toISOString() ?? null,
  };
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function executionInput(row: ExecutionRow): Record<string, unknown> {
  const input = row.input ?? {};
  return {
    message: typeof input.message === 'string' ? input.message : null,
    ...input,
    customer_id: row.customer_id ?? (typeof input.customer_id === 'string' ? input.customer_id : null),
    channel: row.channel,
  };
}

export function toTriggerExecutionOut(row: ExecutionRow): z.output<typeof TriggerExecutionOut> {
  return {
    id: row.id,
    trigger_id: row.trigger_id,
    workflow_id: row.workflow_id,
    status: row.status,
    triggered_at: iso(row.triggered_at)!,
    completed_at: iso(row.completed_at),
    duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
    input: executionInput(row),
    output: { workflow_execution_id: row.execution_id },
  };
}

/** Why the workflow's concurrency rule skipped a firing (its `error.code`), in words. */
const SKIP_MESSAGES: Record<string, string> = {
  [ALREADY_RUNNING]: "The workflow's execution for this customer is still running; the concurrency rule started none",
  [QUEUE_FULL]: "The workflow's queue for this customer is full; the concurrency rule started none",
};

export function toTriggerExecutionDetailOut(row: ExecutionRow): z.output<typeof TriggerExecutionDetailOut> {
  const base = toTriggerExecutionOut(row);
  const metadata = { user_agent: null, ...row.metadata, timestamp: iso(row.triggered_at)! } as { user_agent: string | null; timestamp: string };
  return {
    ...base,
    input: { ...base.input, metadata },
    output: { workflow_execution_id: row.execution_id, workflow_status: row.workflow_status },
    error:
      row.status === 'failed'
        ? { code: row.error_code ?? 'TRIGGER_EXECUTION_FAILED', type: row.error_type, message: row.error_message ?? 'Trigger execution failed' }
        : row.status === 'skipped'
          ? { code: row.error_code ?? ALREADY_RUNNING, type: null, message: SKIP_MESSAGES[row.error_code ?? ALREADY_RUNNING] ?? SKIP_MESSAGES[ALREADY_RUNNING]! }
          : null,
  };
}
