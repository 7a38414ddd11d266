/**
 * Reads the bodies Meta POSTs to a connection's hook (WhatsApp Cloud API
 * `whatsapp_business_account` and Instagram Messaging `instagram` objects) into the
 * messages and delivery statuses they carry. Pure: no I/O, so the receiver's cost beyond
 * the message write is this walk and the signature check.
 *
 * Only the envelope is required (`object`, `entry[]`): an item of a shape we do not know is
 * counted as ignored, never a failure, so Meta does not redeliver a body forever because
 * of one odd item.
 */
import { nonTextMessageText } from '../../../../../temporal/executions.shared';
import { z } from '../../../../http/zod';
import type { DeliveryStatus } from '../../../conversations/message-deliveries';
import type { IdentityChangeItem, InboundItem, ParsedHook, StatusItem } from '../../channel-provider';

/**
 * What a Meta hook body carries, in the providers' common shapes (channel-provider.ts): `to` is
 * which of the organization's numbers or accounts an item was sent to (WhatsApp's
 * `metadata.phone_number_id`, Instagram's / Messenger's `entry[].id`).
 */
export type MetaInboundMessage = InboundItem;
export type MetaStatusUpdate = StatusItem;
/** `user_changed_number` moves the customer; `user_identity_changed` (security code) is kept on it. */
export type MetaIdentityChange = IdentityChangeItem;
export type MetaHookContent = ParsedHook;
export type { DeliveryStatus };

export const MetaHookEnvelope = z.looseObject({
  object: z.string(),
  entry: z.array(z.looseObject({})).max(1000),
});

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
/** Meta's timestamps are Unix seconds as strings (WhatsApp) or milliseconds as numbers (Instagram). */
const timeOf = (v: unknown, unit: 's' | 'ms'): Date => {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? new Date(unit === 's' ? n * 1000 : n) : new Date();
};
const bounded = (text: string) => text.slice(0, 4096);
const MEDIA_TYPES = ['image', 'audio', 'video', 'document', 'sticker'];
/** The WhatsApp types recorded under their own placeholder (`[location]`); any other is `[unsupported]`. */
const PLACEHOLDER_TYPES = [...MEDIA_TYPES, 'location', 'contacts', 'reaction', 'order'];
/** What a click-to-WhatsApp ad's `referral` holds (Messages webhook reference, referral object). */
const REFERRAL_FIELDS = ['source_url', 'source_id', 'source_type', 'headline', 'body', 'media_type', 'image_url', 'video_url', 'thumbnail_url', 'ctwa_clid'];

const picked = (o: Obj | undefined, fields: string[]): Obj | undefined => {
  if (!o) return undefined;
  const out: Obj = {};
  for (const f of fields) if (typeof o[f] === 'string' || typeof o[f] === 'number') out[f] = typeof o[f] === 'string' ? (o[f] as string).slice(0, 2048) : o[f];
  return Object.keys(out).length > 0 ? out : undefined;
};

/** Who wrote, from a `contacts[]` item: the name they show, their username, their ids. */
interface WhatsAppContact {
  name?: string;
  username?: string;
  waId?: string;
  userId?: string;
  parentUserId?: string;
}

/**
 * The customer's id: their `wa_id` (`from`) when Meta gives it, else their business-scoped
 * user id (BSUID, `from_user_id` / `user_id`), which is all there is for a user who hides
 * their number behind a username.
 */
const senderOf = (m: Obj): string | undefined => str(m.from) ?? str(m.from_user_id) ?? str(m.user_id);

/** One WhatsApp `messages[]` item: its text and metadata, or undefined when it has no sender or id. */
function whatsAppMessage(m: Obj, contacts: Map<string, WhatsAppContact>, to: string | undefined): MetaInboundMessage | undefined {
  const from = senderOf(m);
  const id = str(m.id);
  if (!from || !id) return undefined;
  const type = str(m.type) ?? 'unsupported';
  const metadata: Obj = { type };
  let text: string | undefined;
  if (type === 'text') text = str(obj(m.text)?.body);
  else if (type === 'interactive') {
    const interactive = obj(m.interactive);
    const kind = str(interactive?.type);
    const reply = kind ? obj(interactive?.[kind]) : undefined;
    if (reply && (kind === 'button_reply' || kind === 'list_reply')) {
      text = str(reply.title);
      metadata.interactive = { type: kind, id: str(reply.id) ?? null };
    }
  } else if (type === 'button') {
    // A template's quick-reply button.
    text = str(obj(m.button)?.text);
    metadata.button_payload = str(obj(m.button)?.payload) ?? null;
  } else if (MEDIA_TYPES.includes(type)) {
    metadata.media_id = str(obj(m[type])?.id) ?? null;
    const caption = str(obj(m[type])?.caption);
    if (caption) metadata.caption = caption;
  } else if (type === 'location') {
    const l = obj(m.location);
    metadata.location = { latitude: l?.latitude ?? null, longitude: l?.longitude ?? null, ...picked(l, ['name', 'address']) };
  } else if (type === 'reaction') {
    // What the customer reacted to: the wamid of one of our messages (an empty emoji removes the reaction).
    const r = obj(m.reaction);
    metadata.reaction = { emoji: typeof r?.emoji === 'string' ? r.emoji : null, message_id: str(r?.message_id) ?? null };
  }
  const referral = picked(obj(m.referral), REFERRAL_FIELDS);
  if (referral) metadata.referral = referral;
  const context = obj(m.context);
  if (str(context?.id)) metadata.context = { message_id: str(context?.id) };
  if (text === undefined) text = nonTextMessageText(PLACEHOLDER_TYPES.includes(type) ? type : 'unsupported');
  const contact = contacts.get(from);
  if (contact?.username) metadata.username = contact.username;
  const bsuid = str(m.from_user_id) ?? str(m.user_id) ?? contact?.userId;
  if (bsuid) metadata.user_id = bsuid;
  const parent = str(m.from_parent_user_id) ?? str(m.parent_user_id) ?? contact?.parentUserId;
  if (parent) metadata.parent_user_id = parent;
  const name = contact?.name ?? contact?.username;
  return {
    externalId: from,
    providerMessageId: id,
    text: bounded(text),
    metadata,
    ...(name ? { name } : {}),
    sentAt: timeOf(m.timestamp, 's'),
    ...(to ? { to } : {}),
  };
}

/** A `system` item: a notice about the customer (number or identity change), never their message. */
function whatsAppSystemNotice(m: Obj, to: string | undefined): MetaIdentityChange | undefined {
  const from = senderOf(m);
  const system = obj(m.system);
  const kind = str(system?.type);
  if (!from || !kind) return undefined;
  const newExternalId = str(system?.wa_id) ?? str(system?.customer) ?? str(system?.user_id);
  return {
    externalId: from,
    kind,
    ...(newExternalId && newExternalId !== from ? { newExternalId } : {}),
    ...(str(system?.identity) ? { identity: str(system?.identity)!.slice(0, 200) } : {}),
    at: timeOf(m.timestamp, 's'),
    ...(to ? { to } : {}),
  };
}

const STATUSES: DeliveryStatus[] = ['sent', 'delivered', 'read', 'failed'];

function whatsAppStatus(s: Obj, to: string | undefined): MetaStatusUpdate | undefined {
  const id = str(s.id);
  const status = str(s.status) as DeliveryStatus | undefined;
  if (!id || !status || !STATUSES.includes(status)) return undefined;
  const e = obj(arr(s.errors)[0]);
  const error = e
    ? { code: typeof e.code === 'number' ? e.code : null, title: str(e.title) ?? null, message: str(e.message) ?? str(obj(e.error_data)?.details) ?? null }
    : undefined;
  return { providerMessageId: id, status, at: timeOf(s.timestamp, 's'), ...(error ? { error } : {}), ...(to ? { to } : {}) };
}

export function readWhatsAppHook(entries: Obj[]): MetaHookContent {
  const out: MetaHookContent = { messages: [], statuses: [], identityChanges: [], ignored: 0 };
  for (const entry of entries) {
    for (const change of arr(entry.changes).map(obj)) {
      const value = obj(change?.value);
      if (!value || change?.field !== 'messages') {
        out.ignored++;
        continue;
      }
      // Which of the organization's numbers it was sent to: one app webhook serves every number.
      const to = str(obj(value.metadata)?.phone_number_id);
      const contacts = new Map<string, WhatsAppContact>();
      for (const c of arr(value.contacts).map(obj)) {
        const profile = obj(c?.profile);
        const contact: WhatsAppContact = {
          name: str(profile?.name)?.slice(0, 200),
          username: str(profile?.username)?.slice(0, 200),
          waId: str(c?.wa_id),
          userId: str(c?.user_id),
          parentUserId: str(c?.parent_user_id),
        };
        for (const key of [contact.waId, contact.userId]) if (key) contacts.set(key, contact);
      }
      for (const m of arr(value.messages).map(obj)) {
        if (m && str(m.type) === 'system') {
          const notice = whatsAppSystemNotice(m, to);
          if (notice) out.identityChanges!.push(notice);
          else out.ignored++;
          continue;
        }
        const read = m && whatsAppMessage(m, contacts, to);
        if (read) out.messages.push(read);
        else out.ignored++;
      }
      for (const s of arr(value.statuses).map(obj)) {
        const read = s && whatsAppStatus(s, to);
        if (read) out.statuses.push(read);
        else out.ignored++;
      }
    }
  }
  return out;
}

/**
 * Instagram (and Messenger) `entry[].messaging[]`: customer messages, postbacks (ice breakers,
 * persistent-menu items: the customer's choice, its title as text) and reactions (kept with
 * the message they refer to). `to` is the account the entry is for (`entry.id`).
 */
export function readInstagramHook(entries: Obj[]): MetaHookContent {
  const out: MetaHookContent = { messages: [], statuses: [], ignored: 0 };
  for (const entry of entries) {
    const to = str(entry.id);
    for (const item of arr(entry.messaging).map(obj)) {
      const read = item && instagramItem(item, to);
      if (read) out.messages.push(read);
      else out.ignored++;
    }
  }
  return out;
}

function instagramItem(item: Obj, to: string | undefined): MetaInboundMessage | undefined {
  const sender = str(obj(item.sender)?.id);
  if (!sender) return undefined;
  const base = { externalId: sender, sentAt: timeOf(item.timestamp, 'ms'), ...(to ? { to } : {}) };
  const postback = obj(item.postback);
  if (postback) {
    const title = str(postback.title);
    const payload = str(postback.payload);
    const mid = str(postback.mid);
    if (!mid || (!title && !payload)) return undefined;
    return { ...base, providerMessageId: mid, text: bounded(title ?? payload!), metadata: { type: 'postback', postback: { title: title ?? null, payload: payload?.slice(0, 1000) ?? null } } };
  }
  const reaction = obj(item.reaction);
  if (reaction) {
    const mid = str(reaction.mid);
    const action = str(reaction.action) ?? 'react';
    if (!mid) return undefined;
    // A reaction has no id of its own: the message it is on, who, what and when make one.
    return {
      ...base,
      providerMessageId: `reaction.${mid}.${sender}.${action}.${Number(item.timestamp) || 0}`.slice(0, 255),
      text: nonTextMessageText('reaction'),
      metadata: { type: 'reaction', reaction: { emoji: str(reaction.emoji) ?? null, reaction: str(reaction.reaction) ?? null, action, mid } },
    };
  }
  const message = obj(item.message);
  const mid = str(message?.mid);
  // Echoes are our own sends coming back: not a customer message.
  if (!message || !mid || message.is_echo === true) return undefined;
  const metadata: Obj = { type: 'text' };
  let text = str(message.text);
  const attachment = obj(arr(message.attachments)[0]);
  if (text === undefined) {
    const type = str(attachment?.type) ?? 'attachment';
    metadata.type = type;
    metadata.media_url = str(obj(attachment?.payload)?.url) ?? null;
    text = nonTextMessageText(['image', 'audio', 'video', 'share', 'story_mention'].includes(type) ? type : 'attachment');
  }
  const quick = str(obj(message.quick_reply)?.payload);
  if (quick) metadata.quick_reply = { payload: quick };
  const replyTo = str(obj(message.reply_to)?.mid);
  if (replyTo) metadata.reply_to = { mid: replyTo };
  const referral = picked(obj(message.referral) ?? obj(item.referral), ['ref', 'source', 'type', 'ad_id', 'ads_context_data']);
  if (referral) metadata.referral = referral;
  return { ...base, providerMessageId: mid, text: bounded(text), metadata };
}
