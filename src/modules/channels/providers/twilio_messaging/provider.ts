/**
 * The Twilio Messaging provider (`twilio_messaging`): SMS, or WhatsApp through Twilio, on a
 * Twilio account (the same account as `twilio_voice` may use).
 * - config: `account_sid`, the Auth Token, `channel` (`sms` | `whatsapp`: the connection's
 *   conversation channel), and the sender: `phone_number` (E.164), `messaging_service_sid`,
 *   or both;
 * - hook: Twilio's form-encoded requests at the one channel hook route, signed
 *   `X-Twilio-Signature` (twilio-hook.ts), answered with an empty TwiML `<Response/>`;
 * - window: WhatsApp's 24-hour customer service window (Twilio sends only approved Content
 *   templates outside it, which this connection does not send); SMS has none;
 * - send: `POST Messages.json` (twilio-messages.ts) with `StatusCallback` = the hook, so
 *   Twilio's statuses come back as delivery statuses; a question with choices as text that
 *   lists them;
 * - test: the account read of twilio_voice (`GET Accounts/{sid}.json`).
 */
import { z } from '../../../../http/zod';
import type { Config } from '../../../../config';
import type { ChannelProvider, ChannelSend, ProviderFailure } from '../../channel-provider';
import { secretField } from '../config-fields';
import { windowRefusal } from '../meta/meta-provider';
import { fetchTwilioAccount } from '../twilio_voice/twilio-api';
import { AccountSid, PhoneNumber } from '../twilio_voice/voice.schemas';
import { addressOf } from './twilio-addresses';
import { twilioMessagingHook } from './twilio-hook';
import { createTwilioMessage, TwilioError } from './twilio-messages';

const config = z
  .strictObject({
    account_sid: AccountSid,
    auth_token: secretField("The account's Auth Token: sends are authenticated and X-Twilio-Signature of every hook is checked with it."),
    channel: z.enum(['sms', 'whatsapp']).openapi({ description: 'The conversation channel: `sms`, or `whatsapp` (WhatsApp through Twilio, addresses `whatsapp:+E164`)' }),
    phone_number: PhoneNumber.optional().openapi({ description: 'The sender: a Twilio number (SMS), or the WhatsApp sender registered at Twilio, E.164' }),
    messaging_service_sid: z
      .string()
      .trim()
      .regex(/^MG[0-9a-fA-F]{32}$/, "messaging_service_sid must be a Twilio Messaging Service SID (MG followed by 32 hex digits)")
      .optional()
      .openapi({ description: 'Sends through this Messaging Service (its sender pool); its incoming messages are this connection’s' }),
  })
  .refine((c) => c.phone_number !== undefined || c.messaging_service_sid !== undefined, { message: 'phone_number or messaging_service_sid is required', path: ['phone_number'] });

/** Twilio's error codes (https://www.twilio.com/docs/api/errors) that name an address no message can reach. */
const UNDELIVERABLE_CODES = new Set([
  21211, // Invalid 'To' phone number
  21408, // Permission to send an SMS has not been enabled for the region
  21610, // The recipient replied STOP: unsubscribed
  21612, // The 'To' phone number is not currently reachable
  21614, // 'To' number is not a valid mobile number
  63003, // Channel could not find the To address
  63024, // Invalid message recipient
]);
/** WhatsApp through Twilio: a free-form message outside the 24-hour window. */
const WINDOW_CLOSED_CODE = 63016;
/** SMS bodies: Twilio refuses more than 1600 characters. */
const BODY_MAX = 1600;

const hookUrl = (cfg: Pick<Config, 'BASE_URL'>, connectionId: string) => `${cfg.BASE_URL}/hooks/channels/${connectionId}`;

/** A question with choices as text: the choices listed after it (a text channel has no buttons). */
function bodyOf(msg: ChannelSend): string {
  const titles = msg.choices?.rows.map((r) => r.title) ?? [];
  const text = titles.length > 1 ? `${msg.text}\nReply ${titles.slice(0, -1).join(', ')} or ${titles.at(-1)}` : msg.text;
  return text.slice(0, BODY_MAX);
}

function mapTwilioError(err: unknown): ProviderFailure | undefined {
  if (!(err instanceof TwilioError)) return undefined;
  const { status, code, message } = err;
  if (status === 0 || status === 429 || status >= 500) return { kind: 'retryable', status, message };
  if (status === 401 || code === 20003) return { kind: 'unauthorized', status, message: `Twilio refused the Account SID and Auth Token: ${message}` };
  if (code === WINDOW_CLOSED_CODE) return { kind: 'window_closed', status, message };
  if (code !== undefined && UNDELIVERABLE_CODES.has(code)) return { kind: 'undeliverable', status, message };
  return { kind: 'rejected', status, message };
}

export const twilioMessaging: ChannelProvider = {
  type: 'twilio_messaging',
  config,
  fields: { shown: ['account_sid', 'channel', 'phone_number', 'messaging_service_sid'], secret: ['auth_token'] },
  webhookUrl: hookUrl,
  hook: twilioMessagingHook,
  customerServiceWindow: (c) => c.config.channel === 'whatsapp',
  canSend: (msg, window, c) =>
    c.config.channel === 'whatsapp' ? windowRefusal(msg, window, false, 'WhatsApp allows only approved templates then, which a twilio_messaging connection does not send') : null,
  async send({ connection: c, config: cfg, secret, to, msg }) {
    const channel = c.config.channel!;
    const params = new URLSearchParams({ To: addressOf(channel, to), Body: bodyOf(msg), StatusCallback: hookUrl(cfg, c.id) });
    if (c.config.phone_number) params.set('From', addressOf(channel, c.config.phone_number));
    if (c.config.messaging_service_sid) params.set('MessagingServiceSid', c.config.messaging_service_sid);
    return await createTwilioMessage(
      { baseUrl: cfg.TWILIO_API_URL, accountSid: c.config.account_sid!, authToken: secret('auth_token') ?? '', timeoutMs: cfg.CHANNEL_PROVIDER_TIMEOUT_MS },
      params,
    );
  },
  mapError: mapTwilioError,
  async test({ connection: c, config: cfg, secret }) {
    const res = await fetchTwilioAccount({ baseUrl: cfg.TWILIO_API_URL, accountSid: c.config.account_sid!, authToken: secret('auth_token') ?? '', timeoutMs: cfg.CHANNEL_PROVIDER_TIMEOUT_MS });
    return { ...res, unauthorized: res.status_code === 401 };
  },
};
