/**
 * The fairness bench's flood, sent from a process of its own: `tsx bench/support/flood-sender.ts`
 * with FLOOD_BASE, FLOOD_KEYS, FLOOD_PREFIXES, FLOOD_COUNT and FLOOD_CONCURRENCY in its
 * environment. For each API key of FLOOD_KEYS (comma-separated; one organization each), posts
 * FLOOD_COUNT inbound messages (customers `<prefix>0` …, the key's prefix of FLOOD_PREFIXES)
 * with FLOOD_CONCURRENCY in flight, the organizations at once; prints `sent <n>` every 100
 * (all organizations together) and `done <n>` at the end. In the bench's own process, the flood's
 * requests kept the event loop busy, and B's greetings were timed late by that loop, not by
 * the service.
 *
 * FLOOD_RATE (optional, messages per second per organization) paces the flood: message i is
 * sent no earlier than i / FLOOD_RATE seconds after the start, still with at most
 * FLOOD_CONCURRENCY in flight. The bench's paced phases use it to measure B's latency
 * against the share of the machine the flood takes.
 *
 * It prints `ready` once loaded and warmed up, and sends nothing before SIGUSR2: loading it
 * through tsx, and its first requests, take about a second of CPU each, which, spent as
 * the flood began, was charged to B's first messages of the flood.
 */
import { pool } from '../lib';

async function main(): Promise<void> {
  const base = process.env.FLOOD_BASE!;
  const count = Number(process.env.FLOOD_COUNT);
  const concurrency = Number(process.env.FLOOD_CONCURRENCY);
  const keys = process.env.FLOOD_KEYS!.split(',');
  const prefixes = process.env.FLOOD_PREFIXES!.split(',');
  const rate = Number(process.env.FLOOD_RATE ?? 0);
  let sent = 0;
  // The warm-up of the header comment: fetch's own loading and its connections.
  await pool(concurrency * keys.length, concurrency * keys.length, async () => void (await (await fetch(`${base}/healthz`)).arrayBuffer()));
  await new Promise<void>((go) => {
    // A signal listener does not keep the process alive: without this timer it could exit
    // between `ready` and the signal (it did, once the pipe's write had drained).
    const alive = setInterval(() => undefined, 60_000);
    process.once('SIGUSR2', () => (clearInterval(alive), go()));
    process.stdout.write('ready\n');
  });
  const startedAt = performance.now();
  const flood = async (key: string, prefix: string) => {
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    await pool(count, concurrency, async (i) => {
      if (rate > 0) await new Promise((r) => setTimeout(r, Math.max(0, startedAt + (1000 * i) / rate - performance.now())));
      const post = () => fetch(`${base}/v1/messages`, { method: 'POST', headers, body: JSON.stringify({ channel: 'whatsapp', customer_id: `${prefix}${i}`, message: 'hi' }) });
      let res = await post();
      // As a provider would: a 503 (the service saturated) is retried a second later, a few times.
      for (let retry = 0; res.status === 503 && retry < 5; retry++) {
        await res.arrayBuffer();
        process.stdout.write(`retried ${prefix}${i}\n`);
        await new Promise((r) => setTimeout(r, 1_000));
        res = await post();
      }
      if (!res.ok) throw new Error(`${prefix}${i}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
      if (++sent % 100 === 0) process.stdout.write(`sent ${sent}\n`);
    });
  };
  await Promise.all(keys.map((key, i) => flood(key, prefixes[i]!)));
  process.stdout.write(`done ${sent}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
