/**
 * Owns one delivery attempt end to end, independent of Temporal: load the webhook and the
 * event, build the payload with `retry_count`, send it, write the attempt's log row at
 * once (so it is visible as soon as the attempt ends), deactivate the webhook on a 410,
 * and say whether the attempt was delivered, should be retried, or is final.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../ids';
import { OutboxEvent } from '../events/event.entity';
import { Webhook, WebhookLog } from './webhook.entity';
import { classifyAnswer, MAX_RESPONSE_BODY_BYTES, type WebhookSender } from './webhook.sender';

/** `metadata.version`: the payload format. */
export const EVENT_PAYLOAD_VERSION = '1.0';

export interface EventPayload {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  metadata: { webhook_id: string; retry_count: number; version: string };
}

export function buildEventPayload(
  event: { id: string; type: string; createdAt: Date; data: Record<string, unknown> },
  webhookId: string,
  retryCount: number,
): EventPayload {
  return {
    id: event.id,
    type: event.type,
    timestamp: event.createdAt.toISOString(),
    data: event.data,
    metadata: { webhook_id: webhookId, retry_count: retryCount, version: EVENT_PAYLOAD_VERSION },
  };
}

export type AttemptResult =
  | { kind: 'skipped'; reason: string }
  | { kind: 'delivered'; attempt: number; responseCode: number }
  | { kind: 'retry'; attempt: number; message: string; retryAfterMs: number | undefined }
  | { kind: 'final'; attempt: number; message: string };

export async function performDeliveryAttempt(
  em: EntityManager,
  sender: WebhookSender,
  input: { eventId: string; webhookId: string; organizationId: string; attempt: number },
): Promise<AttemptResult> {
  const webhook = await em.findOne(Webhook, { id: input.webhookId, organizationId: input.organizationId });
  if (!webhook) return { kind: 'skipped', reason: 'webhook deleted' };
  if (!webhook.active) return { kind: 'skipped', reason: 'webhook inactive' };
  const event = await em.findOne(OutboxEvent, { id: input.eventId, organizationId: input.organizationId });
  if (!event) return { kind: 'skipped', reason: 'event not found' };

  const { attempt } = input;
  const body = JSON.stringify(buildEventPayload(event, webhook.id, attempt - 1));
  const outcome = await sender.send({ url: webhook.url, secret: webhook.secret, body, eventId: event.id, attempt });

  let result: AttemptResult;
  let responseCode = 0;
  let errorMessage: string | null = null;
  let responseBody: string | null = null;
  if (outcome.answered) {
    responseCode = outcome.status;
    responseBody = outcome.body.slice(0, MAX_RESPONSE_BODY_BYTES);
    const cls = classifyAnswer(outcome.status);
    if (cls === 'delivered') result = { kind: 'delivered', attempt, responseCode };
    else {
      errorMessage = `HTTP ${outcome.status}${cls === 'gone' ? ': endpoint gone, webhook deactivated' : ''}`;
      result =
        cls === 'retry'
          ? { kind: 'retry', attempt, message: errorMessage, retryAfterMs: outcome.status === 429 ? outcome.retryAfterMs : undefined }
          : { kind: 'final', attempt, message: errorMessage };
    }
  } else {
    errorMessage = outcome.error;
    result =
      outcome.reason === 'forbidden'
        ? { kind: 'final', attempt, message: errorMessage }
        : { kind: 'retry', attempt, message: errorMessage, retryAfterMs: undefined };
  }

  await em.transactional(async (tx) => {
    tx.create(WebhookLog, {
      id: newId('webhookLog'),
      webhookId: webhook.id,
      organizationId: webhook.organizationId,
      eventId: event.id,
      eventType: event.type,
      status: result.kind === 'delivered' ? 'success' : 'failed',
      responseCode,
      responseTimeMs: outcome.durationMs,
      attempt,
      deliveredAt: new Date(),
      errorMessage,
      responseBody,
    });
    if (outcome.answered && classifyAnswer(outcome.status) === 'gone') {
      await tx.nativeUpdate(
        Webhook,
        { id: webhook.id },
        { active: false, deactivatedReason: 'endpoint answered 410 Gone', updatedAt: new Date() },
      );
    }
  });
  return result;
}
