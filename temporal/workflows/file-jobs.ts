/**
 * Owns what the export, report and file-expiry workflows share: their activity options (a
 * generation may take hours, so a dead worker is noticed by the missing heartbeat) and how
 * a final activity failure becomes the record's error message. Not a workflow: deliberately
 * not re-exported by index.ts, whose every exported function the worker registers.
 */
import type { RetryPolicy } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import { FILE_GENERATION_REJECTED } from '../failure-types';

const retry: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: [FILE_GENERATION_REJECTED] };

/**
 * `quick` for bookkeeping activities, `local` for those run in the workflow task that
 * schedules them (the same timeout and retries; idempotent ones only: a crash runs them
 * again), `generation` for the one that streams the file.
 */
export function fileJobActivities<A extends object>() {
  return {
    quick: proxyActivities<A>({ startToCloseTimeout: '1 minute', retry }),
    local: proxyLocalActivities<A>({ startToCloseTimeout: '1 minute', retry }),
    generation: proxyActivities<A>({
      // Large exports take long; a dead worker is noticed by the missing heartbeat instead.
      startToCloseTimeout: '6 hours',
      heartbeatTimeout: '20 seconds',
      retry,
    }),
  };
}

export function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure || cause instanceof Error) return cause.message;
  return 'generation failed';
}
