/**
 * Owns how the service calls Temporal where PostgreSQL already holds the truth (execution
 * and job starts, reply signals): bounded in time, skipped while Temporal is known to be
 * down, never throwing; what it could not do the worker's reconciler does later. Below the
 * modules, so executions, jobs and the rest share it without importing each other.
 */
import { isInfrastructureError } from './failures';
import type { Services } from './services';
import { isTemporalReachable } from './temporal-client';

/** The reconciler is not holding a request: it gives Temporal longer than a request would. */
export const RECONCILE_TEMPORAL_TIMEOUT_MS = 10_000;

/**
 * Runs a Temporal call for a request without ever waiting on it longer than
 * TEMPORAL_CALL_TIMEOUT_MS, and not at all while this process knows Temporal is down (the
 * monitor probes it and says when it is back). Whatever is committed first and left
 * unconfirmed here is finished by the worker's reconciler. Resolves `true` when the call
 * succeeded or failed with an error `accept` takes as done (already started, run gone),
 * `false` when it was skipped, timed out or failed (an outage is reported to the monitor,
 * which logs it once; anything else is logged as a warning). Never throws.
 */
export async function boundedTemporalCall(
  services: Services,
  call: () => Promise<unknown>,
  accept: (err: unknown) => boolean = () => false,
  limitMs: number = services.config.TEMPORAL_CALL_TIMEOUT_MS,
  /** Says what the call was for in its log lines (ids only, never secrets), e.g. `{ execution_id }`. */
  context: Record<string, string> = {},
): Promise<boolean> {
  if (services.dependencies.isDown('temporal')) return false;
  // Aborted at the bound, so the client stops its own retries too (nothing outlives the request).
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      abort.abort();
      resolve('timeout');
    }, limitMs);
  });
  const attempt = services.temporal.connection.withAbortSignal(abort.signal, call).then(
    () => 'ok' as const,
    (err: unknown) => (accept(err) ? ('ok' as const) : { err }),
  );
  try {
    const outcome = await Promise.race([attempt, timeout]);
    if (outcome === 'ok') return true;
    if (outcome === 'timeout') {
      // Whether it happened is unknown here; the reconciler confirms it later (seconds), so say so now.
      services.logger.warn({ ...context, timeout_ms: limitMs }, 'Temporal call cut off at its timeout; left to the reconciler');
      // Slow is not down (a loaded server answers late): only a failed probe marks it down.
      void isTemporalReachable(services.temporal.connection).then((up) => {
        if (!up) services.dependencies.reportDown('temporal', `no answer within ${limitMs} ms`);
      });
    } else if (isInfrastructureError(outcome.err, services.endpoints)) {
      services.dependencies.reportDown('temporal', outcome.err);
    } else {
      services.logger.warn({ ...context, err: outcome.err }, 'Temporal call failed; left to the reconciler');
    }
    return false;
  } finally {
    clearTimeout(timer);
  }
}
