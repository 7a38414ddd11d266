/**
 * Owns the calls to Meta's Graph API (META_GRAPH_API_URL) and how their answers are read:
 * the node check of `POST /v1/channels/{id}/test` and the sends of WhatsApp Cloud API and
 * Instagram Messaging. Graph errors arrive as `{error: {message, type, code, error_subcode,
 * fbtrace_id}}`; `classifyGraphError` turns one into what the service does about it.
 * Plain fetch (undici), as every outbound call of the service.
 */
import { PROVIDER_USER_AGENT } from '../../../../http/user-agent';


/** What a failed Graph call means for the caller. */
export type GraphFailureKind =
  /** 429, code 130429 (throughput), 5xx, a network error or a timeout: try again later. */
  | 'retryable'
  /** A 401 or code 190: the token expired or was revoked; the connection needs a new one. */
  | 'unauthorized'
  /** 131047 (re-engagement) : outside the 24-hour customer service window. */
  | 'window_closed'
  /** 131026: the message cannot be delivered to that number. */
  | 'undeliverable'
  /** Any other refusal: final. */
  | 'rejected';

export class GraphError extends Error {
  constructor(
    readonly kind: GraphFailureKind,
    /** The HTTP status; 0 when Graph did not answer. */
    readonly status: number,
    /** Graph's error code, when it gave one. */
    readonly code: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'GraphError';
  }
}

interface GraphErrorBody {
  error?: { message?: unknown; code?: unknown; error_subcode?: unknown };
}

export function classifyGraphError(status: number, body: unknown): GraphError {
  const e = (body as GraphErrorBody | undefined)?.error;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const text = typeof e?.message === 'string' ? e.message.slice(0, 500) : `Graph API answered ${status}`;
  const message = code === undefined ? `${text} (HTTP ${status})` : `${text} (HTTP ${status}, code ${code})`;
  let kind: GraphFailureKind = 'rejected';
  if (status === 401 || code === 190) kind = 'unauthorized';
  else if (code === 131047) kind = 'window_closed';
  else if (code === 131026) kind = 'undeliverable';
  else if (status === 429 || status >= 500 || code === 130429 || code === 4 || code === 80007) kind = 'retryable';
  return new GraphError(kind, status, code, message);
}

export interface GraphCall {
  baseUrl: string;
  accessToken: string;
  timeoutMs: number;
}

/** One Graph request; resolves with the JSON answer of a 2xx, throws a classified GraphError otherwise. */
export async function graphRequest(call: GraphCall, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${call.baseUrl.replace(/\/+$/, '')}/${path}`, {
      method,
      // The token goes in the header, never in the URL (URLs end up in logs).
      headers: { authorization: `Bearer ${call.accessToken}`, 'user-agent': PROVIDER_USER_AGENT, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(call.timeoutMs),
      redirect: 'manual',
    });
  } catch (err) {
    throw new GraphError('retryable', 0, undefined, `Graph API unreachable: ${(err as Error).message}`);
  }
  const text = await res.text().catch(() => '');
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = undefined;
  }
  if (res.status >= 200 && res.status < 300) return (json ?? {}) as Record<string, unknown>;
  throw classifyGraphError(res.status, json);
}

/** `GET {graph}/{node_id}`: the token can read the phone number / Instagram account. */
export async function fetchGraphNode(call: GraphCall, nodeId: string): Promise<Record<string, unknown>> {
  return await graphRequest(call, 'GET', encodeURIComponent(nodeId));
}

/** A WhatsApp Cloud API template (`type: "template"`), sent outside the 24-hour window. */
export interface WhatsAppTemplate {
  name: string;
  language: string;
  components?: unknown[];
}

/** A WhatsApp interactive list: one section of rows (a rating or NPS question). */
export interface WhatsAppList {
  button: string;
  rows: Array<{ id: string; title: string }>;
}

export type WhatsAppContent = { text: string } | { template: WhatsAppTemplate } | { text: string; list: WhatsAppList };

/** The documented body of `POST {graph}/{phone_number_id}/messages`. */
export function whatsAppMessageBody(to: string, content: WhatsAppContent): Record<string, unknown> {
  const base = { messaging_product: 'whatsapp', recipient_type: 'individual', to };
  if ('template' in content) {
    const { name, language, components } = content.template;
    return { ...base, type: 'template', template: { name, language: { code: language }, ...(components ? { components } : {}) } };
  }
  if ('list' in content) {
    return {
      ...base,
      type: 'interactive',
      interactive: {
        type: 'list',
        body: { text: content.text.slice(0, 1024) },
        action: { button: content.list.button, sections: [{ title: content.list.button, rows: content.list.rows }] },
      },
    };
  }
  return { ...base, type: 'text', text: { body: content.text } };
}

/** Sends through WhatsApp Cloud API; returns the `wamid`. */
export async function sendWhatsApp(call: GraphCall, phoneNumberId: string, to: string, content: WhatsAppContent): Promise<string> {
  const answer = await graphRequest(call, 'POST', `${encodeURIComponent(phoneNumberId)}/messages`, whatsAppMessageBody(to, content));
  const id = (answer.messages as Array<{ id?: unknown }> | undefined)?.[0]?.id;
  if (typeof id !== 'string') throw new GraphError('rejected', 200, undefined, 'Graph API answered without a message id');
  return id;
}

/** Sends through Instagram Messaging; returns the `mid`. */
export async function sendInstagram(call: GraphCall, accountId: string, recipientId: string, text: string): Promise<string> {
  const answer = await graphRequest(call, 'POST', `${encodeURIComponent(accountId)}/messages`, { recipient: { id: recipientId }, message: { text } });
  const id = answer.message_id;
  if (typeof id !== 'string') throw new GraphError('rejected', 200, undefined, 'Graph API answered without a message id');
  return id;
}
