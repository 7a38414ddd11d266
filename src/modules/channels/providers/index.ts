/**
 * The provider registry: one line per connection `type`, each provider in its own folder
 * beside this file. A new provider is its folder, its line here, and at most one migration
 * if it keeps a table of its own: the list of connection types is this registry's keys.
 */
import type { ChannelProvider } from '../channel-provider';
import { http } from './http/provider';
import { instagram } from './instagram/provider';
import { messenger } from './messenger/provider';
import { twilioMessaging } from './twilio_messaging/provider';
import { twilioVoice } from './twilio_voice/provider';
import { whatsappCloud } from './whatsapp_cloud/provider';

const PROVIDERS = {
  whatsapp_cloud: whatsappCloud,
  instagram,
  http,
  twilio_voice: twilioVoice,
  messenger,
  twilio_messaging: twilioMessaging,
} satisfies Record<string, ChannelProvider>;

export type ChannelConnectionType = keyof typeof PROVIDERS;
export const CHANNEL_CONNECTION_TYPES = Object.keys(PROVIDERS) as [ChannelConnectionType, ...ChannelConnectionType[]];

/**
 * A stored connection's provider. `type` was one of the registry's keys when the connection
 * was created (the API validates it), so an unknown one is a defect, not input.
 */
export function providerOf(type: string): ChannelProvider {
  const provider = (PROVIDERS as Record<string, ChannelProvider>)[type];
  if (!provider) throw new Error(`no channel provider for connection type ${type}`);
  return provider;
}
