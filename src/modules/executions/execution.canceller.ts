/**
 * Owns the cancel's dual write between PostgreSQL and Temporal, like the starter owns the
 * start's: the API commits the row `cancelled` (the record it serves), then
 * `sendTemporalCancel` cancels the run and stamps `temporal_cancelled_at`. If the process
 * dies in between, or Temporal is unreachable, the row stays unstamped and the worker's
 * reconciler (`reconcileCancels`) re-sends the cancel; otherwise a run waiting on a form
 * would stay open in Temporal until the form's timeout.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Services } from '../../services';
import { executionWorkflowId } from '../../../temporal/executions.shared';

/**
 * Cancels the Temporal run of a cancelled execution and stamps the row. "Not found" (never
 * started, already closed, past retention) counts as done: there is no open run to stop.
 * Never throws for a Temporal outage; returns whether the cancel is confirmed.
 */
export async function sendTemporalCancel(
  services: Services,
  executionId: string,
  em: EntityManager = services.orm.em.fork() as EntityManager,
): Promise<boolean> {
  try {
    await services.temporal.client.workflow.getHandle(executionWorkflowId(executionId)).cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) {
      services.logger.warn({ err, executionId }, 'Temporal cancel deferred to the reconciler; the run stops at its next step');
      return false;
    }
  }
  await em.execute('update executions set temporal_cancelled_at = now() where id = ? and temporal_cancelled_at is null', [executionId]);
  return true;
}

/**
 * Re-sends the cancel of every cancelled execution whose cancel was never confirmed and
 * that was cancelled more than `graceMs` ago (so it does not race the API's own attempt).
 * No lock is held across the Temporal calls: the rows are read, then each cancel is sent
 * and stamped on its own. Two workers' passes may both send one: a cancel is idempotent
 * (a second request on a run already cancelling changes nothing), so that costs a call,
 * never a wrong state, where a row lock held while Temporal was slow held up every other
 * write of those executions. Returns how many it confirmed.
 */
export async function reconcileCancels(services: Services, opts: { graceMs: number; batch?: number }): Promise<number> {
  const em = services.orm.em.fork() as EntityManager;
  const rows = await em.execute<Array<{ id: string }>>(
    `select id from executions
      where status = 'cancelled' and temporal_cancelled_at is null
        and completed_at < now() - (? * interval '1 millisecond')
      order by completed_at
      limit ?`,
    [opts.graceMs, opts.batch ?? 100],
  );
  let confirmed = 0;
  for (const row of rows) {
    // Temporal is most likely unreachable: stop here rather than wait on every row; the next pass retries.
    if (!(await sendTemporalCancel(services, row.id, em))) break;
    confirmed++;
  }
  return confirmed;
}
