/**
 * Owns the hook of `twilio_messaging` connections at the one channel hook route (form bodies,
 * `hook.body: 'form'`):
 * - verify: `X-Twilio-Signature`, the base64 HMAC-SHA1 of the hook URL and the POST
 *   parameters sorted by name, keyed with the Auth Token, checked by the twilio package's
 *   `validateRequest`; missing or wrong is 403 and nothing is recorded (as voice's hooks);
 * - parse: an incoming message ("A message comes in",
 *   https://www.twilio.com/docs/messaging/guides/webhook-request) is a customer message by
 *   `From` with `MessageSid` as its provider id; a status callback (`MessageStatus`,
 *   https://www.twilio.com/docs/messaging/guides/outbound-message-status-in-status-callbacks)
 *   moves our send forward;
 * - answer: an empty TwiML `<Response/>` (nothing to reply now: the execution's replies go
 *   through the Messages resource).
 */
import MessagingResponse from 'twilio/lib/twiml/MessagingResponse';
import { validateRequest } from 'twilio/lib/webhooks/webhooks';
import { AppError } from '../../../../http/errors';
import { isNonTextMessageText, nonTextMessageText } from '../../../../../temporal/executions.shared';
import type { ChannelConnection } from '../../channel.entity';
import type { ChannelHook, InboundItem, ParsedHook, StatusItem } from '../../channel-provider';
import type { DeliveryStatus } from '../../../conversations/message-deliveries';
import { addressOf, customerIdOf } from './twilio-addresses';

const TWILIO_SIGNATURE_HEADER = 'x-twilio-signature';

/** Twilio's message statuses that are ours to show; `queued`, `sending`, `accepted`, `scheduled` (before `sent`) are ignored. */
const STATUSES: Record<string, DeliveryStatus> = {
  sent: 'sent',
  delivered: 'delivered',
  read: 'read',
  failed: 'failed',
  undelivered: 'failed',
  canceled: 'failed',
};

const EMPTY_TWIML = new MessagingResponse().toString();
const TEXT_MAX = 4096;
const MEDIA_MAX = 10;

type Params = Record<string, string | undefined>;

/** The placeholder of a message without text (`[image]`): it matches no keyword, and a waiting form re-asks. */
function placeholderOf(p: Params): string {
  if (p.Latitude !== undefined && p.Longitude !== undefined) return nonTextMessageText('location');
  if (Number(p.NumMedia ?? 0) > 0) {
    const kind = (p.MediaContentType0 ?? '').split('/')[0]!;
    return nonTextMessageText(['image', 'audio', 'video'].includes(kind) ? kind : 'document');
  }
  return nonTextMessageText('unsupported');
}

function inboundOf(c: ChannelConnection, p: Params, sid: string): InboundItem {
  const channel = c.config.channel!;
  const metadata: Record<string, unknown> = { type: 'text' };
  const media = Array.from({ length: Math.min(Number(p.NumMedia ?? 0) || 0, MEDIA_MAX) }, (_, i) => ({ url: p[`MediaUrl${i}`] ?? null, content_type: p[`MediaContentType${i}`] ?? null }));
  if (media.length > 0) metadata.media = media;
  // A WhatsApp quick-reply button: its text is what the customer chose.
  if (p.ButtonPayload !== undefined) metadata.button_payload = p.ButtonPayload.slice(0, 1000);
  if (p.Latitude !== undefined) metadata.location = { latitude: Number(p.Latitude), longitude: Number(p.Longitude), address: p.Address ?? null, label: p.Label ?? null };
  if (p.OriginalRepliedMessageSid) metadata.context = { message_id: p.OriginalRepliedMessageSid };
  const typed = (p.Body ?? '').trim() || (p.ButtonText ?? '').trim();
  // A typed "[image]" would read as a placeholder: only Twilio's parameters say what was sent.
  const text = typed && !isNonTextMessageText(typed) ? typed : placeholderOf(p);
  if (!typed || isNonTextMessageText(typed)) metadata.type = text.slice(1, -1);
  const name = channel === 'whatsapp' ? p.ProfileName?.trim().slice(0, 200) : undefined;
  return { externalId: customerIdOf(channel, p.From!), providerMessageId: sid, text: text.slice(0, TEXT_MAX), metadata, ...(name ? { name } : {}), sentAt: new Date() };
}

function statusOf(p: Params, sid: string): StatusItem | undefined {
  const status = STATUSES[p.MessageStatus ?? ''];
  if (!status) return undefined;
  const code = p.ErrorCode && /^\d{1,9}$/.test(p.ErrorCode) ? Number(p.ErrorCode) : null;
  return {
    providerMessageId: sid,
    status,
    at: new Date(),
    ...(status === 'failed' ? { error: { code, title: `Twilio: ${p.MessageStatus}`, message: p.ErrorMessage?.slice(0, 500) ?? (code ? `https://www.twilio.com/docs/api/errors/${code}` : null) } } : {}),
  };
}

/** Whether an incoming message was sent to this connection: its number, or its Messaging Service. */
const sentTo = (c: ChannelConnection, p: Params): boolean =>
  (c.config.messaging_service_sid !== undefined && p.MessagingServiceSid === c.config.messaging_service_sid) ||
  (c.config.phone_number !== undefined && p.To === addressOf(c.config.channel!, c.config.phone_number));

export const twilioMessagingHook: ChannelHook = {
  body: 'form',
  answer: () => ({ type: 'text/xml', body: EMPTY_TWIML }),
  handshake() {
    throw new AppError(405, 'METHOD_NOT_ALLOWED', 'Twilio posts to this hook: POST only', { headers: { Allow: 'POST' } });
  },
  verify(req, secret) {
    const signature = req.header(TWILIO_SIGNATURE_HEADER);
    const authToken = secret('auth_token') ?? '';
    if (!signature || !authToken || !req.url || !validateRequest(authToken, signature, req.url, req.body as Record<string, string>)) {
      throw new AppError(403, 'INVALID_SIGNATURE', 'X-Twilio-Signature does not match the request signed with the Auth Token');
    }
  },
  parse(connection, body) {
    const p = body as Params;
    const sid = p.MessageSid ?? p.SmsMessageSid ?? p.SmsSid;
    if (!sid || !p.AccountSid) throw new AppError(400, 'INVALID_REQUEST', 'Not a Twilio message request: MessageSid and AccountSid are required');
    // Another account's (a subaccount's) messages are not this connection's.
    if (p.AccountSid !== connection.config.account_sid) return { items: 1, content: null };
    const content: ParsedHook = { messages: [], statuses: [], ignored: 0 };
    if (p.MessageStatus !== undefined && p.MessageStatus !== 'received') {
      const status = statusOf(p, sid);
      if (status) content.statuses.push(status);
      else content.ignored++;
      return { items: 1, content };
    }
    if (!p.From) throw new AppError(400, 'INVALID_REQUEST', 'Not a Twilio message request: From is required', { field: 'From' });
    if (!sentTo(connection, p)) return { items: 1, content: null };
    content.messages.push(inboundOf(connection, p, sid));
    return { items: 1, content };
  },
};
