/**
 * Owns `webhookDeliveryWorkflow`: one event to one webhook. The only step is the attempt
 * activity; Temporal's retry of that activity, configured from the webhook's retry_policy,
 * is the retry schedule (a 429's Retry-After arrives as the failure's nextRetryDelay).
 *
 * Version 2 (docs/webhooks.md#the-first-attempt): the first attempt is a local activity,
 * run by the worker inside the workflow's first task, with no activity task through the
 * server; the attempts after it are the task-queue activity under the rest of the policy.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.activities';
import {
  attemptTimeoutMs,
  buildDeliveryRetryPolicy,
  retryDelayMs,
  WEBHOOK_DELIVERY_WORKFLOW_VERSION,
  type RetryDetails,
  type WebhookAttemptResult,
  type WebhookDeliveryInput,
  type WebhookDeliveryResult,
} from '../webhooks.shared';
import { withSummary } from '../summaries.shared';

/**
 * A run's history before its first workflow task completes: started, task scheduled, task
 * started. Longer means an earlier task of this run was lost (a worker crash, a timeout)
 * and may have sent the local attempt already.
 */
const FIRST_TASK_HISTORY_LENGTH = 3;

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  // Before version 2 every attempt was a task-queue activity. With max_retries 0 the only
  // attempt stays one: a lost worker must not cost it (see the lost first task below).
  if ((input.version ?? 1) < WEBHOOK_DELIVERY_WORKFLOW_VERSION || input.retryPolicy.max_retries === 0) {
    return await taskQueueAttempts(input, 0);
  }
  // Only in the run's first task: after a lost one the local attempt may have been sent
  // without its result reaching history, so it counts as made and the task-queue activity
  // goes on with attempt 2 (a lost task that had not sent yet leaves a gap in the numbers,
  // as an attempt that fails before sending already does).
  if (workflowInfo().historyLength <= FIRST_TASK_HISTORY_LENGTH) {
    const { deliverWebhookAttempt } = proxyLocalActivities<WebhookActivities>({
      startToCloseTimeout: attemptTimeoutMs(input.httpTimeoutMs, input.attemptMarginMs),
      retry: { maximumAttempts: 1 },
    });
    let local: WebhookAttemptResult;
    try {
      local = await withSummary(deliverWebhookAttempt, `deliver to ${input.webhookId} · local attempt`, input);
    } catch (err) {
      // A local activity's own failure arrives as is; an ActivityFailure wraps the others.
      const cause = err instanceof ActivityFailure ? err.cause : err;
      if (cause instanceof ApplicationFailure && cause.nonRetryable) throw err;
      await sleep(retryAfterMs(cause) ?? retryDelayMs(input.retryPolicy, 1));
      return await taskQueueAttempts(input, 1);
    }
    if (local.status !== 'throttled') return local;
    // The webhook's rate_limit had no room: nothing was sent, the first attempt is still to come.
    await sleep(local.waitMs);
    return await taskQueueAttempts(input, 0, true);
  }
  return await taskQueueAttempts(input, 1);
}

/**
 * A 429's Retry-After as the attempt's failure carries it in its details (the SDK does not
 * decode `nextRetryDelay` into workflow code; it acts on it only for task-queue retries).
 */
function retryAfterMs(cause: unknown): number | undefined {
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const details = cause.details?.[0] as RetryDetails | undefined;
  return typeof details?.nextRetryDelayMs === 'number' ? details.nextRetryDelayMs : undefined;
}

/**
 * The attempts after `localAttempts`, as the task-queue activity under the rest of the
 * retry policy. A throttled webhook's attempt that found no room answers `throttled`
 * (docs/webhooks.md#throttle): the workflow waits its turn on a timer, then schedules the
 * rest of the policy again from the attempts actually made, holding that turn. Without a
 * rate_limit that never happens and the commands are those of before the throttle.
 */
async function taskQueueAttempts(input: WebhookDeliveryInput, localAttempts: number, holdsTurn = false): Promise<WebhookDeliveryResult> {
  for (let made = localAttempts, holds = holdsTurn; ; ) {
    const { deliverWebhookAttempt } = proxyActivities<WebhookActivities>({
      startToCloseTimeout: attemptTimeoutMs(input.httpTimeoutMs, input.attemptMarginMs),
      retry: buildDeliveryRetryPolicy(input.retryPolicy, made),
    });
    const attemptInput = made || holds ? { ...input, ...(made ? { localAttempts: made } : {}), ...(holds ? { holdsTurn: true } : {}) } : input;
    const result = await withSummary(deliverWebhookAttempt, `deliver to ${input.webhookId}`, attemptInput);
    if (result.status !== 'throttled') return result;
    await sleep(result.waitMs);
    made = result.attemptsMade;
    holds = true;
  }
}
