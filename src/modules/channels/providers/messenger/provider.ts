/**
 * The Facebook Messenger provider (`messenger`), on Meta's Graph platform like WhatsApp and
 * Instagram:
 * - config: the Page's id, a Page access token (pages_messaging) and the Meta app's secret;
 * - hook: Meta's handshake and `X-Hub-Signature-256` (providers/meta/meta-hook.ts) for
 *   `object: "page"` bodies; `entry[].messaging[]` messages by PSID, `delivery.mids` as
 *   delivery statuses, echoes of our own sends ignored;
 * - window: Messenger's standard messaging window of 24 hours; outside it a message goes only
 *   with the connection's `message_tag` (HUMAN_AGENT, CONFIRMED_EVENT_UPDATE,
 *   POST_PURCHASE_UPDATE, ACCOUNT_UPDATE), as `messaging_type: MESSAGE_TAG`;
 * - send: `POST {graph}/{page_id}/messages` with `recipient.id` = the PSID; a question with
 *   choices as quick replies.
 */
import { z } from '../../../../http/zod';
import type { ChannelHook, ChannelProvider, ParsedHook } from '../../channel-provider';
import { graphIdField, secretField } from '../config-fields';
import { graphRequest, GraphError } from '../meta/meta-graph';
import { metaHook, metaWebhookUrl } from '../meta/meta-hook';
import { MetaHookEnvelope, readInstagramHook } from '../meta/meta-hook-payloads';
import { graphCallOf, mapGraphError, testGraphNode, windowRefusal } from '../meta/meta-provider';
import { AppError } from '../../../../http/errors';

/** The message tags Meta allows outside the standard messaging window. */
export const MESSAGE_TAGS = ['HUMAN_AGENT', 'CONFIRMED_EVENT_UPDATE', 'POST_PURCHASE_UPDATE', 'ACCOUNT_UPDATE'] as const;

const config = z.strictObject({
  page_id: graphIdField('page_id'),
  access_token: secretField('A Page access token with pages_messaging.'),
  app_secret: secretField("The Meta app's secret: X-Hub-Signature-256 of every hook is checked with it."),
  message_tag: z
    .enum(MESSAGE_TAGS)
    .optional()
    .openapi({ description: 'Sent with messages outside the 24-hour standard messaging window (Meta allows HUMAN_AGENT within 7 days); without it those sends fail customer_service_window_closed' }),
});

/** Quick replies: at most 13, titles of at most 20 characters. */
const QUICK_REPLIES_MAX = 13;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);

/** `entry[].messaging[]` of a Page: messages as Instagram's (the same shape), `delivery.mids` as statuses. */
function readPageHook(entries: Obj[]): ParsedHook {
  const messages: Obj[] = [];
  const out: ParsedHook = { messages: [], statuses: [], ignored: 0 };
  for (const entry of entries) {
    const items = Array.isArray(entry.messaging) ? entry.messaging : [];
    const kept: unknown[] = [];
    for (const item of items) {
      const delivery = obj(obj(item)?.delivery);
      if (delivery) {
        const at = new Date(typeof delivery.watermark === 'number' ? delivery.watermark : Date.now());
        for (const mid of Array.isArray(delivery.mids) ? delivery.mids : []) {
          if (typeof mid === 'string') out.statuses.push({ providerMessageId: mid, status: 'delivered', at });
        }
        continue;
      }
      kept.push(item);
    }
    messages.push({ ...entry, messaging: kept });
  }
  const read = readInstagramHook(messages);
  out.messages = read.messages;
  out.ignored += read.ignored;
  return out;
}

/** Meta's hook rules, for `page` bodies. */
const shared = metaHook('instagram', readInstagramHook);
const hook: ChannelHook = {
  handshake: shared.handshake,
  verify: shared.verify,
  parse(_connection, body) {
    const envelope = MetaHookEnvelope.safeParse(body);
    if (!envelope.success) throw new AppError(400, 'INVALID_REQUEST', 'The body must be a Meta webhook object: {object, entry: [...]}');
    return { items: envelope.data.entry.length, content: envelope.data.object === 'page' ? readPageHook(envelope.data.entry) : null };
  },
};

export const messenger: ChannelProvider = {
  type: 'messenger',
  channel: 'messenger',
  config,
  fields: { shown: ['page_id', 'message_tag'], secret: ['access_token', 'app_secret'] },
  webhookUrl: metaWebhookUrl,
  hook,
  customerServiceWindow: true,
  canSend: (msg, window, connection) => windowRefusal(msg, window, Boolean(connection.config.message_tag), 'set the connection’s message_tag'),
  async send(call) {
    const { connection, to, msg, window } = call;
    const tag = connection.config.message_tag;
    const choices = msg.choices && msg.choices.rows.length <= QUICK_REPLIES_MAX ? msg.choices.rows : undefined;
    const answer = await graphRequest(graphCallOf(call), 'POST', `${encodeURIComponent(connection.config.page_id!)}/messages`, {
      recipient: { id: to },
      ...(window.open ? { messaging_type: 'RESPONSE' } : { messaging_type: 'MESSAGE_TAG', tag }),
      message: {
        text: msg.text.slice(0, 2000),
        ...(choices ? { quick_replies: choices.map((r) => ({ content_type: 'text', title: r.title.slice(0, 20), payload: r.id })) } : {}),
      },
    });
    if (typeof answer.message_id !== 'string') throw new GraphError('rejected', 200, undefined, 'Graph API answered without a message id');
    return answer.message_id;
  },
  mapError: mapGraphError,
  test: (call) => testGraphNode(call, call.connection.config.page_id!),
};
