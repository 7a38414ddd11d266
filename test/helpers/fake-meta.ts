/**
 * A fake Meta Graph API (WhatsApp Cloud API and Instagram Messaging) on fake-http-server.ts:
 * the service's real adapter code calls it through META_GRAPH_API_URL. It answers node reads
 * and message sends with Meta's documented shapes (a fresh `wamid` / `mid` per send), and
 * tests script Graph errors (`{error: {message, type, code, fbtrace_id}}`) per request.
 *
 * Also the other direction: the hook bodies Meta POSTs (documented payload shapes) and their
 * `X-Hub-Signature-256`, signed with a real HMAC.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { type Answer, type RecordedRequest, startFakeHttpServer } from './fake-http-server';
import { specConformance } from './spec-conformance';
import type { TestApp } from './app';

export interface GraphSend {
  /** The Graph node the message was sent from (phone_number_id or Instagram account id). */
  node: string;
  authorization: string | undefined;
  body: any;
  /** The id answered (empty when the send was refused). */
  id: string;
  status: number;
}

const sendPath = /^\/v\d+\.\d+\/([^/?]+)\/messages$/;
export const isSend = (r: RecordedRequest) => r.method === 'POST' && sendPath.test(r.path);

/** A Graph error answer, as Meta documents it. */
export const graphError = (status: number, code: number, message = 'Graph error'): Answer => ({
  status,
  body: { error: { message, type: status === 401 ? 'OAuthException' : 'GraphMethodException', code, fbtrace_id: 'AbCdEf' } },
});

export async function startFakeMeta() {
  const sends: GraphSend[] = [];
  const reads: RecordedRequest[] = [];
  // The id answered to each body (a retry of the same body gets a new one, kept last).
  const pending = new Map<string, string>();
  // -- Meta's published OpenAPI checks every request; a violation fails the test (spec-conformance.ts, issue #46).
  const conformance = specConformance('meta');
  const server = await startFakeHttpServer({
    onArrive: conformance.check,
    onAnswer(r) {
      const m = sendPath.exec(r.path);
      if (r.method === 'POST' && m) sends.push({ node: m[1]!, authorization: r.headers.authorization, body: r.json, id: r.status === 200 ? (pending.get(r.raw) ?? '') : '', status: r.status });
      else reads.push(r);
    },
  });
  server.setDefault((r) => {
    const m = sendPath.exec(r.path);
    if (r.method === 'POST' && m) {
      if (r.json?.messaging_product === 'whatsapp') {
        const id = `wamid.${randomBytes(12).toString('base64url')}`;
        pending.set(r.raw, id);
        return { status: 200, body: { messaging_product: 'whatsapp', contacts: [{ input: r.json.to, wa_id: r.json.to }], messages: [{ id }] } };
      }
      const id = `aWdfZAG1${randomBytes(12).toString('base64url')}`;
      pending.set(r.raw, id);
      return { status: 200, body: { recipient_id: r.json?.recipient?.id, message_id: id } };
    }
    const node = r.path.replace(/^\/v\d+\.\d+\//, '').split('?')[0];
    return { status: 200, body: { id: node, display_phone_number: '+1 555-010-0100', verified_name: 'Test Shop' } };
  });
  return {
    /** META_GRAPH_API_URL for the service. */
    url: `${server.url}/v21.0`,
    sends,
    reads,
    /** Texts sent (text body, or the template name / interactive body), in order of the answers. */
    texts: () => sends.filter((s) => s.status === 200).map((s) => s.body?.text?.body ?? s.body?.message?.text ?? s.body?.template?.name ?? s.body?.interactive?.body?.text),
    /** The next sends get these answers, in order. */
    answerSends: (...answers: Answer[]) => server.script(isSend, ...answers),
    /** The next reads (GET of a node) get these answers. */
    answerReads: (...answers: Answer[]) => server.script((r) => r.method === 'GET', ...answers),
    /** Requests checked against Meta's spec: `violations`, `allowed`, `assertConforms()`. */
    conformance,
    /** Stops the server, then fails when any request broke Meta's spec. */
    close: async () => {
      await server.close();
      conformance.assertConforms();
    },
  };
}
export type FakeMeta = Awaited<ReturnType<typeof startFakeMeta>>;

/** `X-Hub-Signature-256` of a raw body, as Meta computes it. */
export const hubSignature = (appSecret: string, raw: string) => `sha256=${createHmac('sha256', appSecret).update(raw).digest('hex')}`;

/** POSTs `body` to a connection's hook as Meta does: the raw JSON, signed with the app secret. */
export function postSignedHook(request: TestApp['request'], channelId: string, body: unknown, appSecret: string) {
  const raw = JSON.stringify(body);
  return request.post(`/hooks/channels/${channelId}`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', hubSignature(appSecret, raw)).send(raw);
}

const unix = (d = new Date()) => String(Math.floor(d.getTime() / 1000));

/** A WhatsApp Cloud API webhook body carrying `messages` and/or `statuses` (one entry, one change). */
export function whatsAppHook(phoneNumberId: string, value: { contacts?: object[]; messages?: object[]; statuses?: object[] }) {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550100100', phone_number_id: phoneNumberId }, ...value },
          },
        ],
      },
    ],
  };
}

/** One inbound WhatsApp message from `waId` with its contact (profile name). */
export function whatsAppMessage(phoneNumberId: string, waId: string, message: Record<string, unknown>, name = 'Ana Diaz') {
  const wamid = `wamid.${randomBytes(12).toString('base64url')}`;
  return {
    wamid,
    body: whatsAppHook(phoneNumberId, {
      contacts: [{ profile: { name }, wa_id: waId }],
      messages: [{ from: waId, id: wamid, timestamp: unix(), ...message }],
    }),
  };
}

export const whatsAppText = (phoneNumberId: string, waId: string, text: string, name?: string) =>
  whatsAppMessage(phoneNumberId, waId, { type: 'text', text: { body: text } }, name);

/** A delivery status of an outbound message, as WhatsApp reports it. */
export function whatsAppStatus(phoneNumberId: string, wamid: string, waId: string, status: 'sent' | 'delivered' | 'read' | 'failed', errors?: object[]) {
  return whatsAppHook(phoneNumberId, {
    statuses: [{ id: wamid, status, timestamp: unix(), recipient_id: waId, ...(errors ? { errors } : {}) }],
  });
}

/** An Instagram Messaging webhook body with one messaging item. */
export function instagramMessage(accountId: string, igsid: string, text: string, opts: { echo?: boolean } = {}) {
  const mid = `aWdfZAG1${randomBytes(12).toString('base64url')}`;
  const sender = opts.echo ? accountId : igsid;
  const recipient = opts.echo ? igsid : accountId;
  return {
    mid,
    body: {
      object: 'instagram',
      entry: [
        {
          id: accountId,
          time: Date.now(),
          messaging: [{ sender: { id: sender }, recipient: { id: recipient }, timestamp: Date.now(), message: { mid, text, ...(opts.echo ? { is_echo: true } : {}) } }],
        },
      ],
    },
  };
}
