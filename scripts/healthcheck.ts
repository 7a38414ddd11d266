/**
 * The image's HEALTHCHECK (`node dist/scripts/healthcheck.js`): healthy when the process
 * answers GET /healthz, on PORT (the API) or else on METRICS_PORT (a worker-only process,
 * src/worker-http.ts). The slim Node image has no curl; this needs nothing but node.
 * Exit 0 healthy, 1 not.
 */
import { get } from 'node:http';

const TIMEOUT_MS = 2_000;

function answers(port: string | undefined): Promise<boolean> {
  if (!port) return Promise.resolve(false);
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port: Number(port), path: '/healthz', timeout: TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

async function main(): Promise<void> {
  const healthy = (await answers(process.env.PORT ?? '3000')) || (await answers(process.env.METRICS_PORT));
  process.exit(healthy ? 0 : 1);
}

void main();
