/**
 * Owns a worker-only process's small HTTP server (on METRICS_PORT): `/metrics` (the same
 * exposition as the API's, with the Core SDK's worker metrics appended), `/healthz` (the
 * event loop answers) and `/readyz` (200 only while the Temporal worker is RUNNING, i.e.
 * polling its task queue; 503 before it started and once it drains). Plain node:http: three
 * fixed paths need no router.
 */
import { createServer, get, type Server } from 'node:http';
import net from 'node:net';
import { type HttpMetrics, metricsExposition } from './services';

export interface WorkerHttpOptions {
  port: number;
  host: string;
  metrics: HttpMetrics;
  /** The Temporal worker's state (`Worker.getState()`), or undefined before it exists. */
  workerState: () => string | undefined;
}

export async function startWorkerHttp(opts: WorkerHttpOptions): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') {
      metricsExposition(opts.metrics).then(
        (body) => res.writeHead(200, { 'content-type': opts.metrics.registry.contentType }).end(body),
        () => res.writeHead(500).end(),
      );
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
      return;
    }
    if (path === '/readyz') {
      const worker = opts.workerState() ?? 'STARTING';
      const ready = worker === 'RUNNING';
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ready ? 'ok' : 'unavailable', checks: { worker } }));
      return;
    }
    res.writeHead(404).end();
  });
  server.listen(opts.port, opts.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return server;
}

/**
 * A loopback address for the Core SDK's Prometheus exporter: a port the OS just handed out
 * (and we released). Core binds it itself and cannot report a port it picked, so we pick.
 */
export async function freeLoopbackAddress(): Promise<string> {
  const port = await new Promise<number>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port: p } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(p));
    });
  });
  return `127.0.0.1:${port}`;
}

/** Reads another exporter's Prometheus text (the Core SDK's, on loopback), within 2 s. */
export function prometheusTextReader(bindAddress: string): () => Promise<string> {
  const url = `http://${bindAddress}/metrics`;
  return () =>
    new Promise<string>((resolve, reject) => {
      const req = get(url, { timeout: 2_000 }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`${url}: ${res.statusCode}`));
          return;
        }
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve(body));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
      req.on('error', reject);
    });
}
