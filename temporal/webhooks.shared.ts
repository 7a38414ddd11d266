/**
 * Owns the Temporal names of webhook delivery: workflow-id builders, the activity's
 * retry policy built from a webhook's retry_policy, failure types, and the I/O types
 * shared by the dispatcher, the workflow and the activity. Imported by workflow code:
 * nothing but @temporalio/common.
 */
import type { RetryPolicy } from '@temporalio/common';

/** DESIGN "Retry growth": delay(n) = min(retry_delay_ms × 2^(n−1), 30 s). */
export const RETRY_BACKOFF_COEFFICIENT = 2;
export const MAX_RETRY_INTERVAL_MS = 30_000;

/** Failure types: a final answer (4xx, 410) or a refused target is never retried. */
export const WEBHOOK_FINAL_FAILURE = 'WebhookDeliveryRejected';
export const WEBHOOK_RETRYABLE_FAILURE = 'WebhookDeliveryFailed';
export const WEBHOOK_NON_RETRYABLE_TYPES = [WEBHOOK_FINAL_FAILURE] as const;

export interface WebhookRetryPolicyInput {
  max_retries: number;
  retry_delay_ms: number;
}

/** The webhook's retry_policy as a Temporal activity RetryPolicy. */
export function buildDeliveryRetryPolicy(p: WebhookRetryPolicyInput): RetryPolicy {
  return {
    initialInterval: Math.min(p.retry_delay_ms, MAX_RETRY_INTERVAL_MS),
    backoffCoefficient: RETRY_BACKOFF_COEFFICIENT,
    maximumInterval: MAX_RETRY_INTERVAL_MS,
    maximumAttempts: p.max_retries + 1,
    nonRetryableErrorTypes: [...WEBHOOK_NON_RETRYABLE_TYPES],
  };
}

/** The wait before retry `n` (n = 1 is the wait after the first attempt) under that policy. */
export function retryDelayMs(p: WebhookRetryPolicyInput, n: number): number {
  return Math.min(p.retry_delay_ms * RETRY_BACKOFF_COEFFICIENT ** (n - 1), MAX_RETRY_INTERVAL_MS);
}

/**
 * The wait after a 429 answer to attempt `n` that carried Retry-After: honoured, but never
 * sooner than the policy's own delay and never beyond the 30 s cap.
 */
export function delayAfterRetryAfter(p: WebhookRetryPolicyInput, n: number, retryAfterMs: number): number {
  return Math.min(Math.max(retryAfterMs, retryDelayMs(p, n)), MAX_RETRY_INTERVAL_MS);
}

/** Workflow type name of `webhookDeliveryWorkflow`, for the dispatcher and redeliveries that start it by name. */
export const WEBHOOK_DELIVERY_WORKFLOW_TYPE = 'webhookDeliveryWorkflow';

/** One delivery workflow per (event, webhook): a crash or a second dispatcher finds it taken. */
export const deliveryWorkflowId = (eventId: string, webhookId: string) => `webhook-delivery:${eventId}:${webhookId}`;

/** A redelivery is its own workflow, named after the log entry it repeats and a request id. */
export const redeliveryWorkflowId = (eventId: string, webhookId: string, requestId: string) =>
  `webhook-redelivery:${eventId}:${webhookId}:${requestId}`;

export interface WebhookDeliveryInput {
  eventId: string;
  webhookId: string;
  organizationId: string;
  retryPolicy: WebhookRetryPolicyInput;
  /** The deployment's HTTP timeout, so the activity's own timeout can exceed it. */
  httpTimeoutMs: number;
  /** Attempts of this event to this webhook made before (redeliveries continue the count). */
  previousAttempts?: number;
}

export type WebhookDeliveryResult =
  | { status: 'delivered'; attempt: number; responseCode: number }
  | { status: 'skipped'; reason: string };
