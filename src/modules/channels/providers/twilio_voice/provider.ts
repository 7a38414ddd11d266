/**
 * The Twilio Voice provider (`twilio_voice`): its hooks are the voice URLs of
 * voice-hooks.routes.ts (Twilio's signature, TwiML answers). It has no `send`: the synchronous
 * TwiML answer of each call request is its send, so a call's messages are spoken there.
 */
import type { ChannelProvider } from '../../channel-provider';
import { fetchTwilioAccount } from './twilio-api';
import { voiceHookUrl } from './voice-hook-url';
import { TwilioVoiceConfig } from './voice.schemas';

export const twilioVoice: ChannelProvider = {
  type: 'twilio_voice',
  channel: 'voice',
  config: TwilioVoiceConfig,
  fields: { shown: ['account_sid', 'phone_number'], secret: ['auth_token'] },
  webhookUrl: voiceHookUrl,
  customerServiceWindow: false,
  canSend: () => null,
  mapError: () => undefined,
  async test({ connection: c, config, secret }) {
    const res = await fetchTwilioAccount({
      baseUrl: config.TWILIO_API_URL,
      accountSid: c.config.account_sid!,
      authToken: secret('auth_token') ?? '',
      timeoutMs: config.CHANNEL_PROVIDER_TIMEOUT_MS,
    });
    return { ...res, unauthorized: res.status_code === 401 };
  },
};
