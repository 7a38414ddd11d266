/**
 * Owns the worker's reconciler loop, the second half of every dual write between
 * PostgreSQL and Temporal: every EXECUTION_RECONCILE_INTERVAL_MS it starts the committed
 * rows of every durable start kind (executions, exports, reports, replays, dry runs) whose
 * Temporal start was never confirmed, re-delivers inbound replies whose signal was never
 * confirmed, and re-sends the Temporal cancel of cancelled executions whose cancel was
 * never confirmed (all older than EXECUTION_RECONCILE_GRACE_MS, so it does not race the
 * API's own attempt). It lives with executions, above the starts module it drives, so the
 * modules' imports keep running one way.
 */
import { classifyError } from '../../failures';
import type { Services } from '../../services';
import { reconcileStarts, type StartKind } from '../starts/durable-start';
import { type JobRow, JOBS } from '../starts/job-starts';
import { reconcileCancels } from './execution.canceller';
import { EXECUTION_START } from './execution.starter';
import { redeliverReplies } from './reply-delivery';

/** The durable start kinds besides executions (counted together as `jobs`). */
const JOB_KINDS: Array<StartKind<JobRow>> = [JOBS.export, JOBS.report, JOBS.replay, JOBS.dryRun, JOBS.webhookRecovery];

export async function reconcileOnce(services: Services, graceMs = services.config.EXECUTION_RECONCILE_GRACE_MS) {
  const started = await reconcileStarts(services, EXECUTION_START, { graceMs });
  const redelivered = await redeliverReplies(services, graceMs);
  const cancelled = await reconcileCancels(services, { graceMs });
  let jobs = 0;
  for (const kind of JOB_KINDS) jobs += await reconcileStarts(services, kind, { graceMs });
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
        else services.logger.warn({ err }, 'reconciler pass failed');
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
