/**
 * The one fake channel provider of the tests: a real local HTTP server (fake-http-server.ts)
 * that the HTTP channel adapter posts to (CHANNEL_PROVIDER_URL). It records every message
 * as it arrives and as it is answered, answers 200 unless a test scripted other answers
 * for a text (`answer`) or for every message (`answerAll`), and holds messages until the
 * test releases them (`holdText`, `holdAll`). Fake Meta Graph and Twilio servers are meant
 * to be built the same way on fake-http-server.ts.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Answer, type RecordedRequest, startFakeHttpServer } from './fake-http-server';

/** The body the HTTP channel adapter posts (src/modules/executions/channel-adapter.ts). */
export interface ChannelMessage {
  idempotency_key: string;
  channel: string;
  to: string | null;
  customer_id: string | null;
  text: string;
  execution_id: string;
  node_id: string;
}

export interface ArrivedMessage {
  text: string;
  idempotencyKey: string;
  message: ChannelMessage;
  headers: IncomingHttpHeaders;
}

export interface ProviderRequest extends ArrivedMessage {
  /** What the provider answered (0: the connection was dropped). */
  status: number;
}

const messageOf = (r: RecordedRequest) => r.json as ChannelMessage;
const textIs = (text: string) => (r: RecordedRequest) => messageOf(r)?.text === text;

export async function startChannelProvider() {
  // Live arrays (not snapshots), so a test may keep a reference and read it later.
  const sent: ProviderRequest[] = [];
  const received: ArrivedMessage[] = [];
  const arrived: string[] = [];
  const keys: string[] = [];
  const toArrived = (r: RecordedRequest): ArrivedMessage => ({
    text: messageOf(r)?.text,
    idempotencyKey: String(r.headers['idempotency-key']),
    message: messageOf(r),
    headers: r.headers,
  });
  const server = await startFakeHttpServer({
    defaultBody: { ok: true },
    onArrive(r) {
      const m = toArrived(r);
      received.push(m);
      arrived.push(m.text);
      keys.push(m.idempotencyKey);
    },
    onAnswer: (r) => void sent.push({ ...toArrived(r), status: r.status }),
  });
  return {
    /** The URL to set as CHANNEL_PROVIDER_URL. */
    url: `${server.url}/send`,
    /** Answered messages, in the order of their answers. */
    sent,
    /** Messages as they arrive, before any hold or delay. */
    received,
    /** Texts as they arrive, before any hold or delay. */
    arrived,
    /** Idempotency keys as they arrive, before any hold or delay. */
    keys,
    /** The next messages with `text` get these answers (statuses, delays, drops), in order; then the default again. */
    answer: (text: string, ...answers: Answer[]) => server.script(textIs(text), ...answers),
    /** Every message without a scripted answer gets `answer` from now on (initially 200). */
    answerAll: (answer: Answer) => server.setDefault(answer),
    /** Holds every message with `text` until the returned function is called. */
    holdText: (text: string) => server.hold(textIs(text)),
    /** Holds every message until the returned function is called. */
    holdAll: () => server.hold(() => true),
    /** Releases every hold and stops the server. */
    close: () => server.close(),
  };
}

export type ChannelProvider = Awaited<ReturnType<typeof startChannelProvider>>;
