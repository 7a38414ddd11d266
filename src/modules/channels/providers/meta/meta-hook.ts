/**
 * Owns the hook rules shared by Meta's providers (whatsapp_cloud, instagram), moved from
 * channel-hooks.routes.ts:
 * - GET: Meta's subscription handshake. `hub.mode=subscribe` with the connection's verify
 *   token answers the `hub.challenge` as text/plain; anything else 403.
 * - POST: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app_secret, raw body)>`, compared in
 *   constant time; missing or wrong is 401 and nothing is recorded.
 */
import { AppError } from '../../../../http/errors';
import { constantTimeEqual, signBody } from '../../../../http/signature';
import type { ChannelHook } from '../../channel-provider';
import { type MetaHookContent, MetaHookEnvelope } from './meta-hook-payloads';

/** A Meta connection's `webhook_url`: the one channel hook route. */
export const metaWebhookUrl = (config: { BASE_URL: string }, connectionId: string) => `${config.BASE_URL}/hooks/channels/${connectionId}`;

/**
 * Whether `id` (a hook item's `to`) is the connection's own number or account: its WhatsApp
 * `phone_number_id`, or its Instagram account id or Facebook Page id.
 */
export const ownsProviderId = (c: { config: Record<string, string> }, id: string): boolean =>
  c.config.phone_number_id === id || c.config.instagram_account_id === id || c.config.page_id === id;

export const HUB_SIGNATURE_HEADER = 'x-hub-signature-256';

/** A Meta provider's hook: `object` is the webhook object its connections subscribe to. */
export function metaHook(object: 'whatsapp_business_account' | 'instagram', read: (entries: Array<Record<string, unknown>>) => MetaHookContent): ChannelHook {
  return {
    handshake(req, secret) {
      const q = req.query;
      const token = typeof q['hub.verify_token'] === 'string' ? q['hub.verify_token'] : '';
      const challenge = typeof q['hub.challenge'] === 'string' ? q['hub.challenge'] : '';
      const expected = secret('verify_token') ?? '';
      if (q['hub.mode'] !== 'subscribe' || !challenge || !expected || !constantTimeEqual(token, expected)) {
        throw new AppError(403, 'INVALID_VERIFY_TOKEN', 'hub.mode must be subscribe and hub.verify_token the connection’s verify token');
      }
      return { type: 'text/plain', body: challenge.slice(0, 1000) };
    },
    verify(req, secret) {
      const signature = req.header(HUB_SIGNATURE_HEADER).trim().toLowerCase();
      if (!signature) throw new AppError(401, 'INVALID_SIGNATURE', 'X-Hub-Signature-256 is required');
      const appSecret = secret('app_secret') ?? '';
      if (!appSecret || !constantTimeEqual(signature, `sha256=${signBody(appSecret, req.rawBody)}`)) {
        throw new AppError(401, 'INVALID_SIGNATURE', 'X-Hub-Signature-256 does not match the body signed with the app secret');
      }
    },
    parse(_connection, body) {
      const envelope = MetaHookEnvelope.safeParse(body);
      if (!envelope.success) throw new AppError(400, 'INVALID_REQUEST', 'The body must be a Meta webhook object: {object, entry: [...]}');
      const items = envelope.data.entry.length;
      return { items, content: envelope.data.object === object ? read(envelope.data.entry) : null };
    },
  };
}
