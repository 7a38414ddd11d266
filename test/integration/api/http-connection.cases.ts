/**
 * Connection-level answers, through real sockets: an oversized body is a 413 that reaches
 * clients which send the whole body before reading the answer (undici's fetch, node:http),
 * does not break a keep-alive client's next request, and is drained only up to a bound;
 * oversized headers get the JSON error envelope with a request id instead of Node's bare 431.
 */
import http from 'node:http';
import net from 'node:net';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { waitFor } from '../../helpers/wait';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Resolves with the response; an error after the response (the server stopped reading) is not the test's concern. */
function send(agent: http.Agent, url: URL, opts: { method: string; headers?: Record<string, string>; chunks?: Buffer[] }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(url, { agent, method: opts.method, headers: opts.headers }, (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    for (const chunk of opts.chunks ?? []) req.write(chunk);
    req.end();
  });
}

describe('HTTP connections', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  afterAll(() => t.close());

  it('answers a 2 MiB chunked body with 413 and the same keep-alive client then succeeds', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const url = new URL('/v1/workflows', t.baseUrl);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const big = await send(agent, url, {
        method: 'POST',
        headers: { ...bearer(key), 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
        chunks: Array.from({ length: 32 }, () => chunk),
      });
      expect(big.status).toBe(413);
      expect(JSON.parse(big.body).error.code).toBe('PAYLOAD_TOO_LARGE');
      for (let i = 0; i < 3; i++) {
        const next = await send(agent, url, { method: 'GET', headers: bearer(key) });
        expect(next.status).toBe(200);
      }
    } finally {
      agent.destroy();
    }
  });

  it('answers a declared oversized body with 413 and the next keep-alive request succeeds', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const url = new URL('/v1/workflows', t.baseUrl);
      const body = Buffer.alloc(2 * 1024 * 1024, 'x');
      const big = await send(agent, url, {
        method: 'POST',
        headers: { ...bearer(key), 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
        chunks: [body],
      });
      expect(big.status).toBe(413);
      const next = await send(agent, url, { method: 'GET', headers: bearer(key) });
      expect(next.status).toBe(200);
    } finally {
      agent.destroy();
    }
  });

  const tooLarge = { error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 1 MiB' } };
  /** A 2 MiB JSON document (valid JSON, so only its size is wrong), in two parts: more than 1 MiB, then the rest. */
  const twoMiBJson = () => {
    const whole = Buffer.from(JSON.stringify({ name: 'Big', description: 'x'.repeat(2 * 1024 * 1024) }));
    const cut = 1024 * 1024 + 256 * 1024;
    return { whole, first: whole.subarray(0, cut), rest: whole.subarray(cut) };
  };
  /** 413 answers the service has given so far, from its Prometheus counter. */
  const answered413 = async () => {
    const text = await (await fetch(new URL('/metrics', t.baseUrl))).text();
    return text
      .split('\n')
      .filter((line) => line.startsWith('http_requests_total{') && line.includes('status="413"'))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
  };
  /**
   * The rest of the body is sent only once the service has answered 413: the client is still
   * writing when the answer comes, whatever the socket buffers' sizes.
   */
  const after413 = async (before: number) => waitFor(async () => (await answered413()) > before, 'the 413 answer');

  it('answers a 2 MiB body sent with fetch (undici) with the 413 envelope and Connection: close', async () => {
    for (const chunked of [false, true]) {
      const { whole, first, rest } = twoMiBJson();
      const before = await answered413();
      // Pulled part by part; a client that hit a reset cancels the rest of its body.
      const parts = [first, rest];
      let cancelled: unknown;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const part = parts.shift();
          if (!part) return controller.close();
          if (part === rest) await after413(before);
          controller.enqueue(new Uint8Array(part));
        },
        cancel(reason) {
          cancelled = reason ?? 'cancelled';
        },
      });
      const res = await fetch(new URL('/v1/workflows', t.baseUrl), {
        method: 'POST',
        // Without Content-Length the body goes out chunked: the parser, not the header, refuses it.
        headers: { ...bearer(key), 'Content-Type': 'application/json', ...(chunked ? {} : { 'Content-Length': String(whole.length) }) },
        body,
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(res.headers.get('connection')).toBe('close');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('x-request-id')).toBeTruthy();
      expect(await res.json()).toEqual(tooLarge);
      // The whole body was taken: nothing left unsent, no reset.
      expect(cancelled).toBeUndefined();
      expect(parts).toEqual([]);
    }
  });

  it('answers node:http, which writes the whole 2 MiB body before reading, with the 413 envelope and Connection: close', async () => {
    const { whole, first, rest } = twoMiBJson();
    const before = await answered413();
    const req = http.request(new URL('/v1/workflows', t.baseUrl), {
      agent: false,
      method: 'POST',
      headers: { ...bearer(key), 'Content-Type': 'application/json', 'Content-Length': String(whole.length) },
    });
    const response = new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    const failed = new Promise<Error>((resolve) => req.once('error', resolve));
    const closedEarly = new Promise<string>((resolve) => {
      const early = () => resolve('closed before the body was written');
      req.once('close', early);
      req.once('socket', (socket) => socket.once('close', early));
    });
    req.write(first);
    await after413(before);
    // The whole body reaches the socket without a reset; only then is the answer read.
    const written = await Promise.race([new Promise<unknown>((resolve) => req.end(rest, (err?: Error | null) => resolve(err ?? 'written'))), failed, closedEarly]);
    expect(written).toBe('written');
    const res = await response;
    let text = '';
    res.setEncoding('utf8');
    for await (const chunk of res) text += chunk;
    expect(res.statusCode).toBe(413);
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(text)).toEqual(tooLarge);
  });

  it('stops draining a refused body past its bound and closes the connection', async () => {
    const { port } = new URL(t.baseUrl);
    const declared = 64 * 1024 * 1024;
    const outcome = await new Promise<{ answer: string; written: number }>((resolve) => {
      let answer = '';
      let written = 0;
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `POST /v1/workflows HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
        );
        const chunk = Buffer.alloc(256 * 1024, 0x20);
        const pump = () => {
          while (written < declared && !socket.destroyed) {
            written += chunk.length;
            if (!socket.write(chunk)) return void socket.once('drain', pump);
          }
        };
        pump();
      });
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (answer += c));
      socket.on('error', () => socket.destroy());
      socket.on('close', () => resolve({ answer, written }));
    });
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(outcome.answer).toMatch(/\r\nconnection: close\r\n/i);
    // The server closed the connection long before the declared 64 MiB were sent.
    expect(outcome.written).toBeLessThan(declared);
  });

  it('answers oversized headers with a JSON 431 envelope carrying a request id', async () => {
    const { port } = new URL(t.baseUrl);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write(`GET /v1/workflows HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
      });
      let data = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (data += c));
      socket.on('end', () => resolve(data));
      socket.on('close', () => resolve(data));
      socket.on('error', (err) => (data ? resolve(data) : reject(err)));
    });
    const [head, body] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/\r\ncontent-type: application\/json/i);
    expect(head).toMatch(/\r\nx-request-id: [0-9a-f-]{36}/i);
    expect(JSON.parse(body ?? '')).toEqual({ error: { code: 'HEADERS_TOO_LARGE', message: expect.stringContaining('headers') } });
  });
});
