/**
 * Owns the worker's reconciler loop, the second half of every dual write between
 * PostgreSQL and Temporal: every EXECUTION_RECONCILE_INTERVAL_MS it starts the committed
 * rows of every durable start kind (executions, exports, reports, replays, dry runs, agent messages,
 * debounced bursts' debouncers) whose
 * Temporal start was never confirmed, re-delivers inbound replies whose signal was never
 * confirmed, and re-sends the Temporal cancel of cancelled executions whose cancel was
 * never confirmed (all older than EXECUTION_RECONCILE_GRACE_MS, so it does not race the
 * API's own attempt). An execution promoted from its customer's queue is started as soon as
 * the database announces it (`wfa_promoted`), not at the next pass. It lives beside the worker's
 * composition that wires it (main.ts), above every module whose starts it drives, so no module
 * imports another that sits above it to reconcile.
 */
import { listenTo } from './db/listen';
import { classifyError } from './failures';
import type { Services } from './services';
import { serviceMetricsFor } from './telemetry/service-metrics';
import { AGENT_MESSAGE_START } from './modules/channels/agent-messages';
import { BURST_START } from './modules/debounce/burst-closer';
import { reconcileStarts, type StartKind } from './modules/starts/durable-start';
import { type JobRow, JOBS } from './modules/starts/job-starts';
import { reconcileCancels } from './modules/executions/execution.canceller';
import { EXECUTION_START, startPromotedExecution } from './modules/executions/execution.starter';
import { redeliverReplies } from './modules/executions/reply-delivery';

/** The durable start kinds besides executions (counted together as `jobs`). */
const JOB_KINDS: Array<StartKind<JobRow>> = [JOBS.export, JOBS.report, JOBS.replay, JOBS.dryRun, JOBS.webhookRecovery];

export async function reconcileOnce(services: Services, graceMs = services.config.EXECUTION_RECONCILE_GRACE_MS) {
  const started = await reconcileStarts(services, EXECUTION_START, { graceMs });
  const redelivered = await redeliverReplies(services, graceMs);
  const cancelled = await reconcileCancels(services, { graceMs });
  let jobs = 0;
  for (const kind of JOB_KINDS) jobs += await reconcileStarts(services, kind, { graceMs });
  jobs += await reconcileStarts(services, AGENT_MESSAGE_START, { graceMs });
  jobs += await reconcileStarts(services, BURST_START, { graceMs });
  return { started, redelivered, cancelled, jobs };
}

/** The channel the database announces a promoted execution on (Migration20261221000100_promote_notify). */
export const PROMOTED_CHANNEL = 'wfa_promoted';

/**
 * Starts the loop, and starts each execution the database promotes from a queue as soon as
 * it is announced (a lost announcement leaves it to the next pass). The returned function
 * stops both and waits for the pass in progress.
 */
export function runExecutionReconciler(services: Services): () => Promise<void> {
  const promoted = listenTo({ databaseUrl: services.config.DATABASE_URL, channel: PROMOTED_CHANNEL, logger: services.logger }, (id) => {
    if (!id) return;
    startPromotedExecution(services, id).catch((err: unknown) => services.logger.warn({ err, execution_id: id }, 'promoted execution not started; left to the reconciler'));
  });
  let stopped = false;
  let current: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    if (stopped) return;
    current = reconcileOnce(services)
      .then((r) => {
        const catchUps = serviceMetricsFor(services.metrics.registry).reconcilerCatchUps;
        catchUps.inc({ kind: 'executions' }, r.started);
        catchUps.inc({ kind: 'replies' }, r.redelivered);
        catchUps.inc({ kind: 'cancels' }, r.cancelled);
        catchUps.inc({ kind: 'jobs' }, r.jobs);
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
    await promoted.stop();
    await current;
  };
}
