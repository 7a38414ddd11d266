/** Owns reading the two sides a dry run compares: the recorded execution and the dry run's own rows. */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { RunRecord, StepView } from './dry-run.diff';

interface StepRow {
  node_id: string;
  type: string;
  status: string;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  error_type: string | null;
  error_message: string | null;
}

const toStep = (r: StepRow): StepView & { node_id: string } => ({
  node_id: r.node_id,
  type: r.type,
  status: r.status,
  input: r.input,
  output: r.output,
  error: r.error_type || r.error_message ? { type: r.error_type, message: r.error_message } : null,
});

/** Steps in the execution detail's order; outbound messages (what the customer was sent) in sending order. */
export async function loadRecordedRun(em: EntityManager, executionId: string): Promise<RunRecord> {
  const steps = await em.execute<StepRow[]>(
    `select node_id, type, status, input, output, error_type, error_message from execution_steps
      where execution_id = ? order by started_at, completed_at, id`,
    [executionId],
  );
  const messages = await em.execute<Array<{ node_id: string; text: string }>>(
    `select node_id, text from messages where execution_id = ? and direction = 'outbound' order by created_at, id`,
    [executionId],
  );
  return { steps: steps.map(toStep), messages };
}

export async function loadDryRunRecord(em: EntityManager, dryRunId: string, executionId: string): Promise<RunRecord> {
  const steps = await em.execute<StepRow[]>(
    `select node_id, type, status, input, output, error_type, error_message from dry_run_steps
      where dry_run_id = ? and execution_id = ? order by seq`,
    [dryRunId, executionId],
  );
  const messages = await em.execute<Array<{ node_id: string; text: string }>>(
    'select node_id, text from dry_run_messages where dry_run_id = ? and execution_id = ? order by seq',
    [dryRunId, executionId],
  );
  return { steps: steps.map(toStep), messages };
}

/** The customer's recorded replies to the execution (not the message that started it), in the order they came. */
export async function loadRecordedReplies(em: EntityManager, executionId: string): Promise<Array<{ messageId: string; text: string }>> {
  const rows = await em.execute<Array<{ id: string; text: string }>>(
    `select id, text from messages
      where execution_id = ? and direction = 'inbound' and reply_to_wait is not null order by created_at, id`,
    [executionId],
  );
  return rows.map((r) => ({ messageId: r.id, text: r.text }));
}
