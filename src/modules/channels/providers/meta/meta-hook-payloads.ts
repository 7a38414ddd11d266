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

/** A customer message as `receiveMessage` takes it, plus when Meta says it was sent. */
export interface MetaInboundMessage {
  externalId: string;
  providerMessageId: string;
  text: string;
  metadata: Record<string, unknown>;
  name?: string;
  sentAt: Date;
}

export type { DeliveryStatus };

export interface MetaStatusUpdate {
  providerMessageId: string;
  status: DeliveryStatus;
  at: Date;
  error?: { code: number | null; title: string | null; message: string | null };
}

export interface MetaHookContent {
  messages: MetaInboundMessage[];
  statuses: MetaStatusUpdate[];
  /** Items skipped: echoes of our own sends, unknown shapes, other fields. */
  ignored: number;
}

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

/** One WhatsApp `messages[]` item: its text and metadata, or undefined when it has no sender or id. */
function whatsAppMessage(m: Obj, names: Map<string, string>): MetaInboundMessage | undefined {
  const from = str(m.from);
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
    metadata.location = { latitude: l?.latitude ?? null, longitude: l?.longitude ?? null };
  }
  if (text === undefined) text = nonTextMessageText(MEDIA_TYPES.includes(type) || type === 'location' || type === 'contacts' || type === 'reaction' ? type : 'unsupported');
  const name = names.get(from);
  return { externalId: from, providerMessageId: id, text: bounded(text), metadata, ...(name ? { name } : {}), sentAt: timeOf(m.timestamp, 's') };
}

const STATUSES: DeliveryStatus[] = ['sent', 'delivered', 'read', 'failed'];

function whatsAppStatus(s: Obj): MetaStatusUpdate | undefined {
  const id = str(s.id);
  const status = str(s.status) as DeliveryStatus | undefined;
  if (!id || !status || !STATUSES.includes(status)) return undefined;
  const e = obj(arr(s.errors)[0]);
  const error = e
    ? { code: typeof e.code === 'number' ? e.code : null, title: str(e.title) ?? null, message: str(e.message) ?? str(obj(e.error_data)?.details) ?? null }
    : undefined;
  return { providerMessageId: id, status, at: timeOf(s.timestamp, 's'), ...(error ? { error } : {}) };
}

export function readWhatsAppHook(entries: Obj[]): MetaHookContent {
  const out: MetaHookContent = { messages: [], statuses: [], ignored: 0 };
  for (const entry of entries) {
    for (const change of arr(entry.changes).map(obj)) {
      const value = obj(change?.value);
      if (!value || change?.field !== 'messages') {
        out.ignored++;
        continue;
      }
      const names = new Map<string, string>();
      for (const c of arr(value.contacts).map(obj)) {
        const waId = str(c?.wa_id);
        const name = str(obj(c?.profile)?.name);
        if (waId && name) names.set(waId, name.slice(0, 200));
      }
      for (const m of arr(value.messages).map(obj)) {
        const read = m && whatsAppMessage(m, names);
        if (read) out.messages.push(read);
        else out.ignored++;
      }
      for (const s of arr(value.statuses).map(obj)) {
        const read = s && whatsAppStatus(s);
        if (read) out.statuses.push(read);
        else out.ignored++;
      }
    }
  }
  return out;
}

export function readInstagramHook(entries: Obj[]): MetaHookContent {
  const out: MetaHookContent = { messages: [], statuses: [], ignored: 0 };
  for (const entry of entries) {
    for (const item of arr(entry.messaging).map(obj)) {
      const message = obj(item?.message);
      const sender = str(obj(item?.sender)?.id);
      const mid = str(message?.mid);
      // Echoes are our own sends coming back: not a customer message.
      if (!message || !sender || !mid || message.is_echo === true) {
        out.ignored++;
        continue;
      }
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
      out.messages.push({ externalId: sender, providerMessageId: mid, text: bounded(text), metadata, sentAt: timeOf(item?.timestamp, 'ms') });
    }
  }
  return out;
}
