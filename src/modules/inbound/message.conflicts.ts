/**
 * What a message's starts do when their workflow's slot for the customer is held
 * (`configuration.concurrency.on_conflict`, docs/executions.md "One conversation per
 * customer"): the plan handed to the message's statement (which starts to queue, which
 * slots to take over) and the reading of what the statement did. The statement decides;
 * this file only names the starts (inbound/message.writes.ts composes the SQL).
 */
import { type PendingExecution, runningExecutionIds } from '../executions/execution.starter';
import { retrying } from '../../db/transaction';
import { sendTemporalCancel } from '../executions/execution.canceller';
import type { InboundServices } from './inbound-state';
import { DEFAULT_CONCURRENCY } from '../workflows/workflow.schemas';
import { ALREADY_RUNNING, QUEUE_FULL, type SkipReason } from '../triggers/trigger-firing';
import type { MessageTargets } from './message-targets';

export { QUEUE_FULL, type SkipReason };

/** A start the concurrency rule skipped, with the slot it found held. */
export interface SkippedStart {
  workflowId: string;
  triggerId: string | null;
  concurrencyKey: string;
  reason: SkipReason;
}

/**
 * What the message did to one workflow; `skipped`: `id` is the execution already running
 * (`reason`: `already_running`, or `queue_full` under `on_conflict: "queue"`); `queued`: the
 * execution waits for the running one; `started` may name the execution it replaced.
 */
export type InboundOutcome =
  | { id: string; workflow_id: string; trigger_id: string | null; action: 'started' | 'resumed' | 'queued'; replaced_execution_id?: string }
  | { id: string | null; workflow_id: string; trigger_id: string | null; action: 'skipped'; reason: SkipReason }
  | DebouncedOutcome;

/**
 * The message joined a debounced burst, or opened one (`opened`): no execution yet (`id`
 * null); the burst's one execution starts when it closes (docs/executions.md, "Debounced bursts").
 */
export interface DebouncedOutcome {
  id: null;
  burst_id: string;
  workflow_id: string;
  trigger_id: string | null;
  action: 'debounced';
  opened: boolean;
}

/** An execution a `replace` start cancelled. */
export interface ReplacedExecution {
  id: string;
  workflow_id: string;
}

/** The starts of a message by rule: execution ids to queue or to start by replacing, and the replaced slots. */
export interface ConflictPlan {
  queue: string[];
  replace: string[];
  replaceKeys: string[];
}

export function planConflicts(targets: MessageTargets, starts: PendingExecution[], keys: string[]): ConflictPlan {
  const plan: ConflictPlan = { queue: [], replace: [], replaceKeys: [] };
  starts.forEach((p, i) => {
    const rule = targets.workflows.get(p.workflowInput.workflowId)?.configuration?.concurrency ?? DEFAULT_CONCURRENCY;
    if (rule.on_conflict === 'queue') plan.queue.push(p.executionId);
    if (rule.on_conflict === 'replace') {
      plan.replace.push(p.executionId);
      plan.replaceKeys.push(keys[i]!);
    }
  });
  return plan;
}

/** The message's starts as the statement left them: started (running), queued, or skipped (and why); and the executions replaced. */
export function sortStarts(
  plan: { starts: PendingExecution[]; keys: string[]; conflicts: ConflictPlan },
  row: { started: string[]; queued: string[]; replaced: ReplacedExecution[] },
) {
  const running = new Set(row.started);
  const waiting = new Set(row.queued);
  const queueable = new Set(plan.conflicts.queue);
  const started: PendingExecution[] = [];
  const queued: PendingExecution[] = [];
  const skipped: SkippedStart[] = [];
  plan.starts.forEach((p, i) => {
    if (running.has(p.executionId)) started.push(p);
    else if (waiting.has(p.executionId)) queued.push(p);
    else {
      const reason = queueable.has(p.executionId) ? QUEUE_FULL : ALREADY_RUNNING;
      skipped.push({ workflowId: p.workflowInput.workflowId, triggerId: p.triggerId, concurrencyKey: plan.keys[i]!, reason });
    }
  });
  return { started, queued, skipped, replaced: row.replaced };
}

/**
 * Adds the concurrency rule's outcomes to a message's answer (queued, skipped, the replaced
 * execution of a start) and, after the commit, cancels the replaced executions' Temporal
 * runs (the cancel path's second half; the reconciler re-sends a lost one). `status` is
 * `queued` or `skipped` when nothing started.
 */
export async function reportConflicts(
  services: InboundServices,
  organizationId: string,
  recorded: { replaced: ReplacedExecution[]; queued: PendingExecution[]; skipped: SkippedStart[]; receivedAt: Date },
  result: { status: string; executions: InboundOutcome[] },
): Promise<void> {
  for (const r of recorded.replaced) {
    services.background.run('replaced execution cancel', () => sendTemporalCancel(services, r.id));
    const started = result.executions.find((e) => e.action === 'started' && e.workflow_id === r.workflow_id);
    if (started && started.action !== 'skipped' && started.action !== 'debounced') started.replaced_execution_id = r.id;
  }
  for (const q of recorded.queued) {
    result.executions.push({ id: q.executionId, workflow_id: q.workflowInput.workflowId, trigger_id: q.triggerId, action: 'queued' });
  }
  if (recorded.queued.length > 0 && result.status === 'no_match') result.status = 'queued';
  if (recorded.skipped.length === 0) return;
  if (result.status === 'no_match') result.status = 'skipped';
  const holders = await slotHolders(services, organizationId, recorded.skipped, recorded.receivedAt);
  for (const s of recorded.skipped) {
    result.executions.push({ id: holders.get(s.concurrencyKey) ?? null, workflow_id: s.workflowId, trigger_id: s.triggerId, action: 'skipped', reason: s.reason });
  }
}

/** Tries of the holders' lookup (each may wait up to the pool's acquire timeout). */
const HOLDER_LOOKUP_ATTEMPTS = 4;

/**
 * The executions holding the skipped starts' slots. The lookup runs after the commit: the
 * message is recorded, and its answer must say so. A failed lookup (on a loaded machine,
 * the pool busy past its acquire timeout) must not become a 503, which a client would resend
 * as a second message. It is tried again, and if it still fails each skip is answered
 * without its holder's id (null, as when the holder has ended since).
 */
function slotHolders(services: InboundServices, organizationId: string, skipped: SkippedStart[], before: Date): Promise<Map<string, string>> {
  const keys = skipped.map((s) => s.concurrencyKey);
  return retrying(() => true, () => runningExecutionIds(services.hotPool, organizationId, keys, before), HOLDER_LOOKUP_ATTEMPTS).catch((err: unknown) => {
    services.logger.warn({ err, organization_id: organizationId }, 'the running executions of skipped starts could not be read after the commit; answered without their ids');
    return new Map<string, string>();
  });
}
