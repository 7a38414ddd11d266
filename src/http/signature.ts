/**
 * The contract's `X-Service-Signature`: lowercase hex HMAC-SHA256 of the exact body bytes,
 * keyed with the secret's UTF-8 bytes. Outbound webhooks sign with it; inbound webhook
 * triggers verify it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Service-Signature';

export function signBody(secret: string, body: string | Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
}

/** Compares in constant time; a length difference is no secret (the expected length is public). */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
