/**
 * Owns the Temporal failure types every workflow may see from any activity (domain-specific
 * ones live in their `*.shared.ts`). Workflow code imports this file: it imports nothing.
 */
export const FailureTypes = {
  /**
   * One of our own dependencies (PostgreSQL, Redis) was unavailable. Retryable while the
   * outage lasts; final once ACTIVITY_INFRA_RETRY_HOURS have passed (executions record it
   * as `timeout`).
   */
  dependencyUnavailable: 'DependencyUnavailable',
  /** A provider or unexpected error with budget left: retried after the delay the activity chose. */
  retryable: 'ActivityRetryable',
} as const;

/**
 * Retry policy of activities that decide their own retries (temporal/failures.ts): no
 * attempt limit here, the activity throws a non-retryable failure when its budget is spent.
 * The intervals only apply to failures that carry no delay of their own (timeouts).
 */
export const ACTIVITY_DECIDES_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
  // No maximumAttempts: unlimited (the SDK refuses 0).
} as const;
