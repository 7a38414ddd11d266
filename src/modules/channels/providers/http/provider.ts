/** The generic HTTP provider (`http`): outbound POSTs to the connection's URL; no inbound hook (POST /v1/messages). */
import type { ChannelProvider } from '../../channel-provider';

export const http: ChannelProvider = {
  type: 'http',
  fields: { shown: ['url', 'channel'], secret: ['secret'] },
};
