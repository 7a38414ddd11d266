/**
 * The Instagram Messaging provider (`instagram`): Meta's hook with `instagram` bodies; sends
 * text to the customer's IGSID, inside the 24-hour window only (Instagram has no templates).
 * Where it sends depends on the login the connection's token comes from (`login`):
 * - `facebook` (the default): a Page access token of the Facebook Page linked to the account,
 *   `POST {META_GRAPH_API_URL}/{page_id}/messages` (`/me/messages`, the token's Page, without
 *   a `page_id`), as Meta's Messenger Platform documents Instagram messaging;
 * - `instagram`: an Instagram User access token of Business Login for Instagram,
 *   `POST {INSTAGRAM_GRAPH_API_URL}/{instagram_account_id}/messages`.
 */
import { z } from '../../../../http/zod';
import type { ChannelProvider, ProviderCall } from '../../channel-provider';
import { graphIdField, secretField } from '../config-fields';
import { sendInstagram } from '../meta/meta-graph';
import { metaHook, metaWebhookUrl } from '../meta/meta-hook';
import { readInstagramHook } from '../meta/meta-hook-payloads';
import { graphCallOf, mapGraphError, testGraphNode, windowRefusal } from '../meta/meta-provider';

const config = z.strictObject({
  instagram_account_id: graphIdField('instagram_account_id'),
  login: z
    .enum(['facebook', 'instagram'])
    .optional()
    .openapi({ description: 'Which login the access token comes from: `facebook` (a Page token; the default) or `instagram` (Business Login for Instagram).' }),
  page_id: graphIdField('page_id').optional().openapi({ description: 'With `login: facebook`: the Facebook Page linked to the account; replies go to /{page_id}/messages.' }),
  access_token: secretField('A token with instagram_manage_messages.'),
  app_secret: secretField("The Meta app's secret: X-Hub-Signature-256 of every hook is checked with it."),
});

export const instagram: ChannelProvider = {
  type: 'instagram',
  channel: 'instagram',
  config,
  fields: { shown: ['instagram_account_id', 'login', 'page_id'], secret: ['access_token', 'app_secret'] },
  webhookUrl: metaWebhookUrl,
  hook: metaHook('instagram', readInstagramHook),
  customerServiceWindow: true,
  canSend: (msg, window) => windowRefusal(msg, window, false, 'give the node a template'),
  send: async (call) => {
    const { baseUrl, node } = instagramNode(call);
    return await sendInstagram({ ...graphCallOf(call), baseUrl }, node, call.to, call.msg.text);
  },
  mapError: mapGraphError,
  test: (call) => {
    const { baseUrl, node } = instagramNode(call);
    return testGraphNode(call, node, baseUrl);
  },
};

/** The Graph host and node a connection's sends and check go to, by its login. */
function instagramNode(call: ProviderCall): { baseUrl: string; node: string } {
  const c = call.connection.config;
  if (c.login === 'instagram') return { baseUrl: call.config.INSTAGRAM_GRAPH_API_URL, node: c.instagram_account_id! };
  return { baseUrl: call.config.META_GRAPH_API_URL, node: c.page_id ?? 'me' };
}
