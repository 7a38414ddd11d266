/**
 * Owns the webhook delivery activity: one attempt per activity attempt, run as the
 * workflow's local first attempt or as the task-queue activity after it. The attempt
 * number comes from Temporal (plus the workflow's local attempt and the attempts of earlier
 * deliveries when this is a redelivery), so `retry_count` and `X-Service-Delivery-Attempt`
 * match the log. Outcomes become Temporal failures: final answers are non-retryable by
 * type, a 429's Retry-After becomes nextRetryDelay (never beyond the 30 s cap, never sooner
 * than the policy), also in the failure's details for the workflow's own wait after the
 * local attempt.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import type { Services } from '../../src/services';
import { serviceMetricsFor } from '../../src/telemetry/service-metrics';
import { performDeliveryAttempt } from '../../src/modules/webhooks/webhook.delivery';
import { WebhookSender } from '../../src/modules/webhooks/webhook.sender';
import { WebhookThrottle } from '../../src/modules/webhooks/webhook-throttle';
import {
  delayAfterRetryAfter,
  type RetryDetails,
  type WebhookAttemptInput,
  type WebhookAttemptResult,
} from '../webhooks.shared';
import { WEBHOOK_FINAL_FAILURE, WEBHOOK_RETRYABLE_FAILURE } from '../failure-types';

export function createWebhookActivities(deps: { services: Services; sender?: WebhookSender }) {
  let sender = deps.sender;
  const getSender = () => (sender ??= WebhookSender.fromConfig(deps.services.config));
  let throttle: WebhookThrottle | undefined;
  const getThrottle = () => (throttle ??= new WebhookThrottle(deps.services.redis, deps.services.config.REDIS_KEY_PREFIX, deps.services.logger));
  return {
    async deliverWebhookAttempt(input: WebhookAttemptInput): Promise<WebhookAttemptResult> {
      // The attempt's place in this delivery's retry schedule, and in the event's count.
      const { attempt: scheduleAttempt } = Context.current().info;
      const n = (input.localAttempts ?? 0) + scheduleAttempt;
      const attempt = (input.previousAttempts ?? 0) + n;
      // Plain statements on the pool (no unit of work), so no fork.
      const result = await performDeliveryAttempt(deps.services.hotPool, getSender(), {
        eventId: input.eventId,
        webhookId: input.webhookId,
        organizationId: input.organizationId,
        attempt,
        // A Temporal retry of this schedule arrives after its backoff: it queues afresh.
        holdsTurn: input.holdsTurn === true && scheduleAttempt === 1,
      }, {
        afterMs: deps.services.config.WEBHOOK_DISABLE_AFTER_HOURS * 3_600_000,
        minAttempts: deps.services.config.WEBHOOK_DISABLE_MIN_ATTEMPTS,
      }, getThrottle());
      serviceMetricsFor(deps.services.metrics.registry).webhookAttempts.inc({ outcome: result.kind });
      switch (result.kind) {
        case 'throttled':
          return { status: 'throttled', waitMs: result.waitMs, attemptsMade: n - 1 };
        case 'skipped':
          return { status: 'skipped', reason: result.reason };
        case 'delivered':
          return { status: 'delivered', attempt: result.attempt, responseCode: result.responseCode };
        case 'final':
          // BENIGN: a receiver's answer is an expected outcome, logged at DEBUG, not a worker error.
          throw ApplicationFailure.create({ type: WEBHOOK_FINAL_FAILURE, message: result.message, nonRetryable: true, category: ApplicationFailureCategory.BENIGN });
        case 'retry': {
          const nextRetryDelay =
            result.retryAfterMs === undefined ? undefined : delayAfterRetryAfter(input.retryPolicy, n, result.retryAfterMs);
          throw ApplicationFailure.create({
            type: WEBHOOK_RETRYABLE_FAILURE,
            message: result.message,
            category: ApplicationFailureCategory.BENIGN,
            ...(nextRetryDelay !== undefined ? { nextRetryDelay, details: [{ nextRetryDelayMs: nextRetryDelay } satisfies RetryDetails] } : {}),
          });
        }
      }
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
