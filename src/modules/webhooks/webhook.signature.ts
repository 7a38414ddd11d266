/**
 * Owns the headers of an outbound delivery attempt: both signatures of src/http/signature.ts
 * (`X-Service-Signature` and the Standard Webhooks trio, `webhook-id` = the event id, so a
 * receiver using `new Webhook(secret, { format: 'raw' })` verifies it and rejects replays),
 * the event id and the attempt number.
 *
 * During a secret rotation's overlap (docs/webhooks.md, "Rotating the secret") the attempt
 * is signed with both secrets: `webhook-signature` carries the new secret's `v1,` signature
 * and then the previous one's, space-separated (the Standard Webhooks specification lets a
 * receiver accept any of them); `X-Service-Signature` stays the new secret's and
 * `X-Service-Signature-Previous` carries the previous secret's.
 */
import { SIGNATURE_HEADER, signBody, standardWebhookSignature } from '../../http/signature';
export const EVENT_ID_HEADER = 'X-Service-Event-Id';
export const ATTEMPT_HEADER = 'X-Service-Delivery-Attempt';
export const PREVIOUS_SIGNATURE_HEADER = 'X-Service-Signature-Previous';

/** Every header of one attempt; `attempt` counts from 1. `previousSecret` only while a rotation's overlap lasts. */
export function deliveryHeaders(opts: {
  secret: string;
  previousSecret?: string | null;
  eventId: string;
  attempt: number;
  body: string;
  now?: Date;
}): Record<string, string> {
  const timestamp = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'WorkflowAutomation-Webhooks/1.0',
    [SIGNATURE_HEADER.toLowerCase()]: signBody(opts.secret, opts.body),
    [EVENT_ID_HEADER.toLowerCase()]: opts.eventId,
    [ATTEMPT_HEADER.toLowerCase()]: String(opts.attempt),
    'webhook-id': opts.eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhookSignature(opts.secret, opts.eventId, timestamp, opts.body),
  };
  if (opts.previousSecret) {
    headers[PREVIOUS_SIGNATURE_HEADER.toLowerCase()] = signBody(opts.previousSecret, opts.body);
    headers['webhook-signature'] += ` ${standardWebhookSignature(opts.previousSecret, opts.eventId, timestamp, opts.body)}`;
  }
  return headers;
}
