/**
 * A channel provider for the executions tests: a real local HTTP server that the HTTP
 * channel adapter posts to (CHANNEL_PROVIDER_URL). It answers 200, except the statuses
 * queued for a text (`answer`), and holds the texts given to `holdText` until released.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ProviderRequest {
  text: string;
  idempotencyKey: string;
  /** What the provider answered. */
  status: number;
}

export async function startChannelProvider() {
  /** Answered requests, in the order of their answers. */
  const sent: ProviderRequest[] = [];
  /** Texts as they arrive, before any hold. */
  const arrived: string[] = [];
  const answers = new Map<string, number[]>();
  const holds = new Map<string, Promise<void>>();
  const releases: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', async () => {
      const { text } = JSON.parse(raw) as { text: string };
      arrived.push(text);
      await holds.get(text);
      const status = answers.get(text)?.shift() ?? 200;
      sent.push({ text, idempotencyKey: String(req.headers['idempotency-key']), status });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/send`,
    sent,
    arrived,
    /** The next requests with `text` get these statuses, in order; then 200 again. */
    answer: (text: string, ...statuses: number[]) => void answers.set(text, statuses),
    /** Holds every request with `text` until the returned function is called. */
    holdText(text: string): () => void {
      let release!: () => void;
      holds.set(text, new Promise<void>((r) => (release = r)));
      releases.push(release);
      return release;
    },
    close() {
      for (const r of releases) r();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type ChannelProvider = Awaited<ReturnType<typeof startChannelProvider>>;
