/**
 * The Twilio Voice provider (`twilio_voice`): its hooks are the voice URLs of
 * voice-hooks.routes.ts (Twilio's signature, TwiML answers: the synchronous TwiML is its send).
 */
import type { ChannelProvider } from '../../channel-provider';
import { voiceHookUrl } from './voice-hook-url';

export const twilioVoice: ChannelProvider = {
  type: 'twilio_voice',
  fields: { shown: ['account_sid', 'phone_number'], secret: ['auth_token'] },
  webhookUrl: voiceHookUrl,
};
