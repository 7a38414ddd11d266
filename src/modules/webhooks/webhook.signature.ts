/**
 * Owns the signatures receivers verify. Both are keyed with the secret's UTF-8 bytes
 * exactly as stored, over the exact bytes sent:
 * - `X-Service-Signature`: lowercase hex HMAC-SHA256 of the body (the contract's header);
 * - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
 *   so a receiver using `new Webhook(secret, { format: 'raw' })` verifies it and rejects
 *   replays by `webhook-timestamp`.
 */
import { createHmac } from 'node:crypto';
import { SIGNATURE_HEADER, signBody } from '../../http/signature';
export const EVENT_ID_HEADER = 'X-Service-Event-Id';
export const ATTEMPT_HEADER = 'X-Service-Delivery-Attempt';

export function standardWebhookSignature(secret: string, id: string, timestampSeconds: number, body: string | Buffer): string {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  mac.update(`${id}.${timestampSeconds}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

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
