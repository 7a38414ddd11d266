/**
 * Shared benchmark plumbing: a fresh database per run (dropped afterwards), a Temporal
 * server (the configured one, one already on 127.0.0.1:7233, or a dev server started for
 * the run), and an autocannon runner that reports req/s and latency percentiles.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { findOrInstallTemporalCli } from '../scripts/lib/temporal-cli';
import { ensureSearchAttributes } from '../src/temporal-search-attributes';
import { startTemporalDevServer } from '../scripts/lib/temporal-dev-server';
import { temporalAnswersAt } from '../src/temporal-client';
import { dropDatabase, ensureDatabase } from '../src/db/orm';

export const log = (msg: string) => process.stdout.write(`${msg}\n`);

export async function benchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const url = `postgresql://postgres@127.0.0.1:5432/wfa_bench_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(url);
  return { url, drop: () => dropDatabase(url) };
}

export async function benchTemporal(): Promise<{ address: string; stop(): Promise<void> }> {
  const configured = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  if (await temporalAnswersAt(configured)) {
    await ensureSearchAttributes(configured, 'default');
    return { address: configured, stop: async () => undefined };
  }
  const executable = await findOrInstallTemporalCli(log);
  if (!executable) throw new Error('No Temporal server reachable and no Temporal CLI: set TEMPORAL_ADDRESS');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wfa-bench-'));
  const server = await startTemporalDevServer({
    executable,
    dbFile: path.join(dir, 'temporal.sqlite'),
    port: 17233 + Math.floor(Math.random() * 1000),
    namespace: 'default',
  });
  return { address: server.address, stop: () => server.stop() };
}

export interface LoadResult {
  label: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

export async function load(
  label: string,
  url: string,
  opts: { durationSeconds: number; connections: number; headers?: Record<string, string> },
): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: opts.connections,
    // The load generator runs in its own thread so it does not share the servers' event loop.
    workers: 1,
    duration: opts.durationSeconds,
    headers: opts.headers ?? {},
  });
  const r: LoadResult = {
    label,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
  log(`${label.padEnd(44)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s   p50 ${r.p50} ms   p99 ${r.p99} ms   non-2xx ${r.non2xx}`);
  return r;
}

export function parseBenchArgs(args: string[], defaults: Record<string, number>): Record<string, number> {
  const out = { ...defaults };
  for (const arg of args) {
    const m = /^--([a-z-]+)=(\d+)$/.exec(arg);
    if (m && m[1]! in out) out[m[1]!] = Number(m[2]);
  }
  return out;
}
