/**
 * The OTLP/HTTP endpoint of `npm run bench -- <name> --otel`: accepts every export and
 * drops it, counting requests and bytes, so a bench measures what tracing costs the
 * service (spans made, batched, encoded and sent) and not a collector's speed.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SpanSink {
  url: string;
  /** Export requests and body bytes received so far. */
  stats(): { requests: number; bytes: number };
  close(): Promise<void>;
}

export async function startSpanSink(): Promise<SpanSink> {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  // Never keeps a bench alive.
  server.unref();
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats: () => ({ requests, bytes }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
