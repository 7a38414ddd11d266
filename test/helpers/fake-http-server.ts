/**
 * Owns the base of every fake provider the tests run (channel provider today; Meta Graph
 * and Twilio later): a real local HTTP server that records each request as it arrives and
 * answers it from a script. A test queues answers per request (status, body, headers,
 * delay, dropped connection) or holds requests until it releases them, then asserts on
 * what the service sent. Provider-specific fakes build on it with their own matching and
 * request shapes (see channel-provider.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path and query, as the client sent them. */
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body. */
  raw: string;
  /** The body parsed as JSON, or undefined when it is empty or not JSON. */
  json: any;
}

/** One scripted answer. A bare number is a status with a JSON `{}` body. */
export type Answer =
  | number
  | {
      status?: number;
      /** Sent as JSON unless it is a string. */
      body?: unknown;
      headers?: Record<string, string>;
      /** Waits this long before answering (e.g. past the client's timeout). */
      delayMs?: number;
      /** Destroys the connection without an answer (a network failure for the client). */
      drop?: boolean;
    };

export interface AnsweredRequest extends RecordedRequest {
  /** The status answered, or 0 for a dropped connection. */
  status: number;
}

export interface FakeHttpServer {
  /** Base URL, without a trailing slash. */
  url: string;
  /** Every request as it arrived, before any hold or delay. */
  arrived: RecordedRequest[];
  /** Requests in the order they were answered (or dropped). */
  answered: AnsweredRequest[];
  /**
   * The next requests matching `match` get these answers, in order; then the default
   * again. Scripts are tried in the order they were added; the first match with answers left wins.
   */
  script(match: (r: RecordedRequest) => boolean, ...answers: Answer[]): void;
  /** The answer for requests no script covers (initially 200 with the default body); a function answers from the request. */
  setDefault(answer: Answer | ((r: RecordedRequest) => Answer)): void;
  /** Holds every request matching `match` until the returned function is called. */
  hold(match: (r: RecordedRequest) => boolean): () => void;
  /** Releases every hold and stops the server. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FakeHttpServerOptions {
  /** The body of answers that do not give one (default `{}`). */
  defaultBody?: unknown;
  /** Called as each request arrives (before holds), for fakes that keep their own views. */
  onArrive?: (r: RecordedRequest) => void;
  /** Called as each request is answered or dropped. */
  onAnswer?: (r: AnsweredRequest) => void;
}

export async function startFakeHttpServer(opts: FakeHttpServerOptions = {}): Promise<FakeHttpServer> {
  const arrived: RecordedRequest[] = [];
  const answered: AnsweredRequest[] = [];
  const scripts: Array<{ match: (r: RecordedRequest) => boolean; answers: Answer[] }> = [];
  const holds: Array<{ match: (r: RecordedRequest) => boolean; released: Promise<void>; release: () => void }> = [];
  const defaultBody = opts.defaultBody ?? {};
  let fallback: Answer | ((r: RecordedRequest) => Answer) = 200;

  const nextAnswer = (r: RecordedRequest): Answer => {
    const s = scripts.find((x) => x.answers.length > 0 && x.match(r));
    if (s) return s.answers.shift()!;
    return typeof fallback === 'function' ? fallback(r) : fallback;
  };

  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      let json: unknown;
      try {
        json = raw ? JSON.parse(raw) : undefined;
      } catch {
        json = undefined;
      }
      const r: RecordedRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, raw, json };
      arrived.push(r);
      opts.onArrive?.(r);
      // Holds added before this request arrived; each one is waited for in turn.
      for (const h of holds.filter((x) => x.match(r))) await h.released;
      const a = nextAnswer(r);
      const answer = typeof a === 'number' ? { status: a } : a;
      if (answer.delayMs) await sleep(answer.delayMs);
      const record = (status: number) => {
        const done = { ...r, status };
        answered.push(done);
        opts.onAnswer?.(done);
      };
      if (answer.drop) {
        record(0);
        req.socket.destroy();
        return;
      }
      const status = answer.status ?? 200;
      const body = answer.body ?? defaultBody;
      record(status);
      if (res.destroyed) return;
      res
        .writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...answer.headers })
        .end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrived,
    answered,
    script: (match, ...answers) => void scripts.push({ match, answers }),
    setDefault: (answer) => void (fallback = answer),
    hold(match) {
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const h = { match, released, release };
      holds.push(h);
      return () => {
        h.release();
        const i = holds.indexOf(h);
        if (i >= 0) holds.splice(i, 1);
      };
    },
    close() {
      for (const h of holds.splice(0)) h.release();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
