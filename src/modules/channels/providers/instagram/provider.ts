/**
 * The Instagram Messaging provider (`instagram`): Meta's hook with `instagram` bodies; sends
 * text `POST {graph}/{instagram_account_id}/messages` to the customer's IGSID, inside the
 * 24-hour window only (Instagram has no templates).
 */
import { z } from '../../../../http/zod';
import type { ChannelProvider } from '../../channel-provider';
import { graphIdField, secretField } from '../config-fields';
import { sendInstagram } from '../meta/meta-graph';
import { metaHook, metaWebhookUrl } from '../meta/meta-hook';
import { readInstagramHook } from '../meta/meta-hook-payloads';
import { graphCallOf, mapGraphError, testGraphNode, windowRefusal } from '../meta/meta-provider';

const config = z.strictObject({
  instagram_account_id: graphIdField('instagram_account_id'),
  access_token: secretField('A token with instagram_manage_messages.'),
  app_secret: secretField("The Meta app's secret: X-Hub-Signature-256 of every hook is checked with it."),
});

export const instagram: ChannelProvider = {
  type: 'instagram',
  channel: 'instagram',
  config,
  fields: { shown: ['instagram_account_id'], secret: ['access_token', 'app_secret'] },
  webhookUrl: metaWebhookUrl,
  hook: metaHook('instagram', readInstagramHook),
  customerServiceWindow: true,
  canSend: (msg, window) => windowRefusal(msg, window, false, 'give the node a template'),
  send: async (call) => await sendInstagram(graphCallOf(call), call.connection.config.instagram_account_id!, call.to, call.msg.text),
  mapError: mapGraphError,
  test: (call) => testGraphNode(call, call.connection.config.instagram_account_id!),
};
