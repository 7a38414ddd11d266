/**
 * Owns the work of a dry run's workflows (called through their activities): start it, give
 * each replayed execution what it runs, and close it. The replay of one execution itself
 * is the execution walk in dry-run mode with the dry run's sink (dry-run.sink.ts).
 */
import { infraRetryMsOf } from '../../config';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../services';
import { EXECUTION_WORKFLOW_VERSION, type ExecutionNodeSpec } from '../../../temporal/executions.shared';
import type { DryRunExecutionPlan } from '../../../temporal/dry-runs.shared';
import { loadRecordedReplies } from './dry-run.records';

const em = (services: Services) => services.orm.em.fork() as EntityManager;

/** Marks the dry run running; returns its executions in the order they were named. */
export async function beginDryRun(services: Services, dryRunId: string): Promise<string[]> {
  const e = em(services);
  await e.execute(`update dry_runs set status = 'running', started_at = now() where id = ? and status = 'pending'`, [dryRunId]);
  const rows = await e.execute<Array<{ execution_id: string }>>('select execution_id from dry_run_items where dry_run_id = ? order by position', [dryRunId]);
  return rows.map((r) => r.execution_id);
}

export async function planDryRunExecution(services: Services, dryRunId: string, executionId: string): Promise<DryRunExecutionPlan> {
  const e = em(services);
  const [row] = await e.execute<
    Array<{
      organization_id: string;
      workflow_id: string;
      revision: string;
      configuration: { nodes: ExecutionNodeSpec[] };
      name: string;
      channel: string;
      customer_id: string | null;
      input: Record<string, unknown>;
    }>
  >(
    `select d.organization_id, d.workflow_id, d.revision, d.configuration, w.name, e.channel, e.customer_id, e.input
       from dry_runs d join workflows w on w.id = d.workflow_id join executions e on e.id = ?
      where d.id = ?`,
    [executionId, dryRunId],
  );
  if (!row) throw new Error(`dry run ${dryRunId} or execution ${executionId} not found`);
  return {
    input: {
      executionId,
      organizationId: row.organization_id,
      workflowId: row.workflow_id,
      workflowName: row.name,
      // A draft has no revision number yet.
      revision: row.revision === 'draft' ? 0 : Number(row.revision),
      channel: row.channel,
      customerId: row.customer_id,
      input: row.input,
      nodes: row.configuration.nodes,
      infraRetryMs: infraRetryMsOf(services.config),
      version: EXECUTION_WORKFLOW_VERSION,
    },
    replies: await loadRecordedReplies(e, executionId),
  };
}

/**
 * Closes the dry run: an item whose replay ended without recording an outcome (its child
 * run failed outside the node walk) is marked failed, so every item ends final.
 */
export async function finishDryRun(services: Services, dryRunId: string): Promise<void> {
  await em(services).transactional(async (tx) => {
    await tx.execute(
      `update dry_run_items set status = 'failed', error_message = 'the replay of this execution ended without an outcome', completed_at = now()
        where dry_run_id = ? and status = 'pending'`,
      [dryRunId],
    );
    await tx.execute(`update dry_runs set status = 'completed', completed_at = now() where id = ? and status in ('pending', 'running')`, [dryRunId]);
  });
}

/** The dry run's workflow itself failed (not one execution's replay): recorded so the API never shows it running forever. */
export async function failDryRun(services: Services, dryRunId: string, message: string): Promise<void> {
  await em(services).execute(
    `update dry_runs set status = 'failed', error_message = ?, completed_at = now() where id = ? and status in ('pending', 'running')`,
    [message.slice(0, 2000), dryRunId],
  );
}
