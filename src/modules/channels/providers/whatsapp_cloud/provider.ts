/** The WhatsApp Cloud API provider (`whatsapp_cloud`): Meta's hook with `whatsapp_business_account` bodies. */
import type { ChannelProvider } from '../../channel-provider';
import { metaHook, metaWebhookUrl } from '../meta/meta-hook';
import { readWhatsAppHook } from '../meta/meta-hook-payloads';

export const whatsappCloud: ChannelProvider = {
  type: 'whatsapp_cloud',
  fields: { shown: ['phone_number_id'], secret: ['access_token', 'app_secret'] },
  webhookUrl: metaWebhookUrl,
  hook: metaHook('whatsapp_business_account', readWhatsAppHook),
};
