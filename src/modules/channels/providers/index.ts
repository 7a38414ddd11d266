/**
 * The provider registry: one line per connection `type`, each provider in its own folder
 * beside this file. A new provider is its folder, its line here (and its `type` in
 * channel.entity.ts's list), and at most one migration if it keeps a table of its own.
 */
import type { ChannelConnectionType } from '../channel.entity';
import type { ChannelProvider } from '../channel-provider';
import { http } from './http/provider';
import { instagram } from './instagram/provider';
import { messenger } from './messenger/provider';
import { twilioMessaging } from './twilio_messaging/provider';
import { twilioVoice } from './twilio_voice/provider';
import { whatsappCloud } from './whatsapp_cloud/provider';

const PROVIDERS: Record<ChannelConnectionType, ChannelProvider> = {
  whatsapp_cloud: whatsappCloud,
  instagram,
  http,
  twilio_voice: twilioVoice,
  messenger,
  twilio_messaging: twilioMessaging,
};

export const providerOf = (type: ChannelConnectionType): ChannelProvider => PROVIDERS[type];
