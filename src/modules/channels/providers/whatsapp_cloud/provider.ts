/**
 * The WhatsApp Cloud API provider (`whatsapp_cloud`): Meta's hook with
 * `whatsapp_business_account` bodies; sends `POST {graph}/{phone_number_id}/messages` (text, an
 * interactive list for a question with choices, a template outside the 24-hour window).
 */
import { z } from '../../../../http/zod';
import type { ChannelProvider } from '../../channel-provider';
import { graphIdField, secretField } from '../config-fields';
import { sendWhatsApp } from '../meta/meta-graph';
import { metaHook, metaWebhookUrl } from '../meta/meta-hook';
import { readWhatsAppHook } from '../meta/meta-hook-payloads';
import { graphCallOf, mapGraphError, testGraphNode, windowRefusal } from '../meta/meta-provider';

const config = z.strictObject({
  phone_number_id: graphIdField('phone_number_id'),
  access_token: secretField('A system-user access token with whatsapp_business_messaging.'),
  app_secret: secretField("The Meta app's secret: X-Hub-Signature-256 of every hook is checked with it."),
});

export const whatsappCloud: ChannelProvider = {
  type: 'whatsapp_cloud',
  channel: 'whatsapp',
  config,
  fields: { shown: ['phone_number_id'], secret: ['access_token', 'app_secret'] },
  webhookUrl: metaWebhookUrl,
  hook: metaHook('whatsapp_business_account', readWhatsAppHook),
  customerServiceWindow: true,
  canSend: (msg, window) => windowRefusal(msg, window, msg.template !== undefined, 'give the node a template'),
  async send(call) {
    const { connection, to, msg, window } = call;
    const phoneNumberId = connection.config.phone_number_id!;
    if (!window.open) return await sendWhatsApp(graphCallOf(call), phoneNumberId, to, { template: msg.template! });
    return await sendWhatsApp(graphCallOf(call), phoneNumberId, to, msg.choices ? { text: msg.text, list: msg.choices } : { text: msg.text });
  },
  mapError: mapGraphError,
  test: (call) => testGraphNode(call, call.connection.config.phone_number_id!),
};
