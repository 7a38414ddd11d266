/**
 * Owns `webhookDeliveryWorkflow`: one event to one webhook. The only step is the attempt
 * activity; Temporal's retry of that activity, configured from the webhook's retry_policy,
 * is the whole retry schedule (a 429's Retry-After arrives as the failure's nextRetryDelay).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.activities';
import { buildDeliveryRetryPolicy, type WebhookDeliveryInput, type WebhookDeliveryResult } from '../webhooks.shared';

/** Room for the DB reads and the log write around the HTTP request. */
const ACTIVITY_MARGIN_MS = 5_000;

export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const { deliverWebhookAttempt } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: input.httpTimeoutMs + ACTIVITY_MARGIN_MS,
    retry: buildDeliveryRetryPolicy(input.retryPolicy),
  });
  return await deliverWebhookAttempt(input);
}
