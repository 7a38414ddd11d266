/**
 * Owns the worker's reconciler loop, the second half of the executions' dual writes: every
 * EXECUTION_RECONCILE_INTERVAL_MS it starts committed executions whose Temporal start was
 * never confirmed, re-delivers inbound replies whose signal was never confirmed, and
 * re-sends the Temporal cancel of cancelled executions whose cancel was never confirmed
 * and starts exports, reports and replays whose Temporal start was never confirmed (all
 * older than EXECUTION_RECONCILE_GRACE_MS, so it does not race the API's own attempt).
 */
import { classifyError } from '../../failures';
import type { Services } from '../../services';
import { reconcileJobs } from '../jobs/job-starter';
import { reconcileCancels } from './execution.canceller';
import { reconcileExecutions } from './execution.starter';
import { redeliverReplies } from './reply-delivery';

export async function reconcileOnce(services: Services, graceMs = services.config.EXECUTION_RECONCILE_GRACE_MS) {
  const started = await reconcileExecutions(services, { graceMs });
  const redelivered = await redeliverReplies(services, graceMs);
  const cancelled = await reconcileCancels(services, { graceMs });
  const jobs = await reconcileJobs(services, { graceMs });
  return { started, redelivered, cancelled, jobs };
}

/** Starts the loop; the returned function stops it and waits for the pass in progress. */
export function runExecutionReconciler(services: Services): () => Promise<void> {
  let stopped = false;
  let current: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    if (stopped) return;
    current = reconcileOnce(services)
      .then((r) => {
        if (r.started + r.redelivered + r.cancelled + r.jobs > 0) {
          services.logger.info(r, 'reconciler started executions / re-delivered replies / re-sent cancels / started jobs');
        }
      })
      .catch((err: unknown) => {
        // An outage is logged once by the monitor, not every pass.
        const c = classifyError(err, services.endpoints);
        if (c.kind === 'infrastructure' && c.dependency !== 'unknown') services.dependencies.reportDown(c.dependency, err);
        else services.logger.warn({ err }, 'execution reconciler pass failed');
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, services.config.EXECUTION_RECONCILE_INTERVAL_MS);
      });
  };
  tick();
  return async () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    await current;
  };
}
