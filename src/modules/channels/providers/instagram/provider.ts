/** The Instagram Messaging provider (`instagram`): Meta's hook with `instagram` bodies. */
import type { ChannelProvider } from '../../channel-provider';
import { metaHook, metaWebhookUrl } from '../meta/meta-hook';
import { readInstagramHook } from '../meta/meta-hook-payloads';

export const instagram: ChannelProvider = {
  type: 'instagram',
  fields: { shown: ['instagram_account_id'], secret: ['access_token', 'app_secret'] },
  webhookUrl: metaWebhookUrl,
  hook: metaHook('instagram', readInstagramHook),
};
