/**
 * A real HTTPS webhook receiver on loopback for tests, with its own certificate authority:
 * `openssl` generates a CA and a leaf for localhost / 127.0.0.1 / ::1 in a temp dir once
 * per test file; the service trusts the CA through `WEBHOOK_EXTRA_CA_FILE` (in-process
 * tests) or `NODE_EXTRA_CA_CERTS` (child processes). Every request is recorded with its
 * exact body bytes; a responder chooses each answer, or 'hang' to never answer.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface TestCertificates {
  dir: string;
  caFile: string;
  cert: string;
  key: string;
}

let certs: TestCertificates | undefined;

/** CA + leaf certificate, generated with the openssl CLI once per test file. */
export function testCertificates(): TestCertificates {
  if (certs) return certs;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wfa-receiver-'));
  const f = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=wfa test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...ec, '-keyout', f('leaf.key'), '-out', f('leaf.csr'), '-subj', '/CN=localhost');
  writeFileSync(
    f('leaf.ext'),
    'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl('x509', '-req', '-in', f('leaf.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial',
    '-out', f('leaf.crt'), '-days', '2', '-extfile', f('leaf.ext'));
  certs = { dir, caFile: f('ca.crt'), cert: readFileSync(f('leaf.crt'), 'utf8'), key: readFileSync(f('leaf.key'), 'utf8') };
  return certs;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The exact bytes received, as UTF-8. */
  body: string;
  /** Date.now() when the body had fully arrived. */
  at: number;
}

export type Answer = { status?: number; headers?: Record<string, string>; body?: string } | 'hang';
/** `n` counts the requests to the same path, from 0. */
export type Responder = (req: ReceivedRequest, n: number) => Answer | Promise<Answer>;

export interface HttpsReceiver {
  port: number;
  caFile: string;
  /** `https://localhost:<port><path>` (or another host that reaches loopback). */
  url(path?: string, host?: string): string;
  requests: ReceivedRequest[];
  requestsTo(path: string): ReceivedRequest[];
  setResponder(responder: Responder): void;
  /** Bounded polling until at least `count` requests reached `path`. */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startHttpsReceiver(responder: Responder = () => ({ status: 200, body: 'ok' })): Promise<HttpsReceiver> {
  const { cert, key, caFile } = testCertificates();
  let respond = responder;
  const requests: ReceivedRequest[] = [];
  const perPath = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = https.createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : (v ?? '');
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(received);
      const n = perPath.get(received.path) ?? 0;
      perPath.set(received.path, n + 1);
      void Promise.resolve(respond(received, n)).then((answer) => {
        if (answer === 'hang') return;
        res.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        res.end(answer.body ?? '');
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const requestsTo = (p: string) => requests.filter((r) => r.path === p);
  return {
    port,
    caFile,
    url: (p = '/hook', host = 'localhost') => `https://${host}:${port}${p}`,
    requests,
    requestsTo,
    setResponder(r) {
      respond = r;
    },
    async waitFor(p, count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (requestsTo(p).length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${requestsTo(p).length} of ${count} requests to ${p} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 25));
      }
      return requestsTo(p);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
