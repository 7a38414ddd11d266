/**
 * Owns the Temporal names of webhook delivery: workflow-id builders, the activity's
 * retry policy built from a webhook's retry_policy, and the I/O types
 * shared by the dispatcher, the workflow and the activity (its failure types are in
 * failure-types.ts). Imported by workflow code: nothing but @temporalio/common and
 * failure-types.ts.
 */
import type { RetryPolicy } from '@temporalio/common';
import { WEBHOOK_NON_RETRYABLE_TYPES } from './failure-types';
import { organizationPriority } from './fairness.shared';

/** DESIGN "Retry growth": delay(n) = min(retry_delay_ms × 2^(n−1), 30 s). */
export const RETRY_BACKOFF_COEFFICIENT = 2;
export const MAX_RETRY_INTERVAL_MS = 30_000;


export interface WebhookRetryPolicyInput {
  max_retries: number;
  retry_delay_ms: number;
}

/**
 * The webhook's retry_policy as a Temporal activity RetryPolicy, for the attempts left after
 * `attemptsMade` (the workflow's own local first attempt): the schedule continues where
 * those left it, so the activity's first retry waits the policy's delay of retry
 * `attemptsMade + 1`, and the attempts add up to `max_retries + 1`.
 */
export function buildDeliveryRetryPolicy(p: WebhookRetryPolicyInput, attemptsMade = 0): RetryPolicy {
  return {
    initialInterval: retryDelayMs(p, attemptsMade + 1),
    backoffCoefficient: RETRY_BACKOFF_COEFFICIENT,
    maximumInterval: MAX_RETRY_INTERVAL_MS,
    maximumAttempts: p.max_retries + 1 - attemptsMade,
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

/**
 * `WebhookDeliveryInput.version` of the deliveries started now: 2 makes the first attempt a
 * local activity (docs/webhooks.md#the-first-attempt). Deliveries started without a version
 * run every attempt as a task-queue activity, as they did when they were started.
 */
export const WEBHOOK_DELIVERY_WORKFLOW_VERSION = 2;

/** The workflow's own margin around an attempt: the DB read and the log write around the HTTP request. */
export const ATTEMPT_MARGIN_MS = 5_000;

/**
 * An attempt's start-to-close timeout, local or on the task queue: the HTTP timeout and the
 * margin (the input's `attemptMarginMs`, set only by tests, or ATTEMPT_MARGIN_MS).
 */
export const attemptTimeoutMs = (httpTimeoutMs: number, marginMs = ATTEMPT_MARGIN_MS) => httpTimeoutMs + marginMs;

/**
 * The delivery workflow's task timeout. A local activity that outlives 80 % of its workflow
 * task makes the SDK complete that task early to keep it alive; a worker lost after that
 * would replay the first task and send attempt 1 again. With the task timeout above the
 * attempt's own (at most 65 s), that never happens. Temporal's cap is 120 s.
 */
export function deliveryWorkflowTaskTimeoutMs(httpTimeoutMs: number, marginMs = ATTEMPT_MARGIN_MS): number {
  return Math.min(Math.ceil(attemptTimeoutMs(httpTimeoutMs, marginMs) / 0.8 / 1000) * 1000 + 1000, 120_000);
}

/**
 * The input and options every new delivery starts with (the dispatcher's and a
 * redelivery's): the current version, and the task timeout that version's local first
 * attempt needs.
 */
export function newDeliveryStart(input: NewDeliveryInput) {
  const args: [WebhookDeliveryInput] = [{ ...input, version: WEBHOOK_DELIVERY_WORKFLOW_VERSION }];
  return {
    args,
    workflowTaskTimeout: deliveryWorkflowTaskTimeoutMs(input.httpTimeoutMs, input.attemptMarginMs),
    priority: organizationPriority(input.organizationId),
  };
}

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
  /** Test-only (WEBHOOK_ATTEMPT_MARGIN_MS): the margin around it; ATTEMPT_MARGIN_MS when absent. */
  attemptMarginMs?: number;
  /** Attempts of this event to this webhook made before (redeliveries continue the count). */
  previousAttempts?: number;
  /** WEBHOOK_DELIVERY_WORKFLOW_VERSION at the start; absent on deliveries started before version 2. */
  version?: number;
}

/** What a caller gives `newDeliveryStart`: the version is not the caller's choice. */
export type NewDeliveryInput = Omit<WebhookDeliveryInput, 'version'>;

/** The details of a retryable attempt failure: the wait a 429's Retry-After asked for, when it did. */
export interface RetryDetails {
  nextRetryDelayMs?: number;
}

/** The attempt activity's input: the delivery's, plus the attempts this workflow made before it as a local activity. */
export interface WebhookAttemptInput extends WebhookDeliveryInput {
  /** Attempts this workflow made before this activity schedule (its local one, or those before a throttle wait). */
  localAttempts?: number;
  /** Back after a throttle wait: this attempt holds its turn in the webhook's queue (docs/webhooks.md#throttle). */
  holdsTurn?: boolean;
}

/**
 * The attempt activity's answer when the webhook's rate_limit has no room yet: nothing was
 * sent. The workflow sleeps `waitMs` (a timer: no worker slot, no retry attempt spent) and
 * asks again, its attempt count still `attemptsMade`.
 */
export interface WebhookThrottled {
  status: 'throttled';
  waitMs: number;
  attemptsMade: number;
}

export type WebhookAttemptResult = WebhookDeliveryResult | WebhookThrottled;

export type WebhookDeliveryResult =
  | { status: 'delivered'; attempt: number; responseCode: number }
  | { status: 'skipped'; reason: string };
