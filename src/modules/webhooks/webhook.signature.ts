/**
 * Owns the headers of an outbound delivery attempt: both signatures of src/http/signature.ts
 * (`X-Service-Signature` and the Standard Webhooks trio, `webhook-id` = the event id, so a
 * receiver using `new Webhook(secret, { format: 'raw' })` verifies it and rejects replays),
 * the event id and the attempt number.
 */
import { SIGNATURE_HEADER, signBody, standardWebhookSignature } from '../../http/signature';
export const EVENT_ID_HEADER = 'X-Service-Event-Id';
export const ATTEMPT_HEADER = 'X-Service-Delivery-Attempt';

/** Every header of one attempt; `attempt` counts from 1. */
export function deliveryHeaders(opts: { secret: string; eventId: string; attempt: number; body: string; now?: Date }): Record<string, string> {
  const timestamp = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'WorkflowAutomation-Webhooks/1.0',
    [SIGNATURE_HEADER.toLowerCase()]: signBody(opts.secret, opts.body),
    [EVENT_ID_HEADER.toLowerCase()]: opts.eventId,
    [ATTEMPT_HEADER.toLowerCase()]: String(opts.attempt),
    'webhook-id': opts.eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhookSignature(opts.secret, opts.eventId, timestamp, opts.body),
  };
}
