/**
 * The signatures this service produces and verifies, keyed with the secret's UTF-8 bytes
 * exactly as stored, over the exact bytes sent:
 * - `X-Service-Signature` (the contract's header): lowercase hex HMAC-SHA256 of the payload;
 * - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.payload">`
 *   with `webhook-id` and `webhook-timestamp`, so replays can be refused by id and age
 *   (a `standardwebhooks` library verifies it with `new Webhook(secret, { format: 'raw' })`).
 * Outbound webhooks sign with both; inbound webhook triggers accept either.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Service-Signature';

/** How far `webhook-timestamp` may be from now, either way (the Standard Webhooks default). */
export const STANDARD_WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

export function signBody(secret: string, body: string | Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
}

export function standardWebhookSignature(secret: string, id: string, timestampSeconds: number, body: string | Buffer): string {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  mac.update(`${id}.${timestampSeconds}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

/** True when any of the space-separated signatures of a `webhook-signature` header matches. */
export function verifyStandardWebhookSignature(secret: string, header: string, id: string, timestampSeconds: number, body: string): boolean {
  const expected = standardWebhookSignature(secret, id, timestampSeconds, body);
  return header
    .split(' ')
    .filter((s) => s !== '')
    .some((s) => constantTimeEqual(s, expected));
}

/** Compares in constant time; a length difference is no secret (the expected length is public). */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
