/**
 * Owns every Temporal failure type name (the `type` of an ApplicationFailure) that a
 * workflow, an activity or a retry policy names: the ones any activity may throw, then each
 * domain's. A failure type is matched by its string, so it is defined once, here. Workflow
 * code imports this file: it imports nothing.
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

/** Activity failure types the execution workflow maps to an execution error_type. */
export const ExecutionErrorTypes = {
  /** Bad configuration or input (knowledge base missing, a reply that never validated). */
  validation: 'ExecutionValidationError',
  /** A provider (channel or model endpoint) refused the request. */
  api: 'ExecutionApiError',
  /**
   * The execution is no longer running in PostgreSQL (cancelled through the API): the node
   * activity did nothing and the run stops without sending anything more.
   */
  notRunning: 'ExecutionNotRunning',
} as const;

/**
 * Channel failures (src/modules/channels): final, recorded as the failed step's error type
 * (the execution's error_type stays `api_error`, the contract's three types).
 */
export const ChannelErrorTypes = {
  unauthorized: 'channel_unauthorized',
  windowClosed: 'customer_service_window_closed',
  undeliverable: 'channel_undeliverable',
  notConnected: 'channel_not_connected',
  disabled: 'channel_disabled',
} as const;
const CHANNEL_ERROR_TYPES: readonly string[] = Object.values(ChannelErrorTypes);
export const isChannelErrorType = (type: string | null | undefined): boolean => typeof type === 'string' && CHANNEL_ERROR_TYPES.includes(type);

/** An agent message whose provider budget is spent (temporal/workflows/agent-message.workflow.ts records it on the message). */
export const AGENT_MESSAGE_SEND_FAILED = 'AgentMessageSendFailed';

/** Webhook delivery: a final answer (4xx, 410) or a refused target is never retried. */
export const WEBHOOK_FINAL_FAILURE = 'WebhookDeliveryRejected';
export const WEBHOOK_RETRYABLE_FAILURE = 'WebhookDeliveryFailed';
export const WEBHOOK_NON_RETRYABLE_TYPES = [WEBHOOK_FINAL_FAILURE] as const;

/** The final failure of a scheduled trigger's firing that kept failing for a reason other than our infrastructure. */
export const TRIGGER_FIRING_FAILED = 'TriggerFiringFailed';

/** Reports and exports: a failure no retry can fix (the record vanished, the request cannot be answered). */
export const FILE_GENERATION_REJECTED = 'FileGenerationRejected';

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
