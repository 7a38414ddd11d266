/**
 * Shared benchmark plumbing: a fresh database per run (dropped afterwards), a Temporal
 * server (the configured one, one already on 127.0.0.1:7233, or a dev server started for
 * the run), and an autocannon runner that reports req/s and latency percentiles.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
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

/**
 * The Temporal server a bench runs on: the one at TEMPORAL_ADDRESS (default 127.0.0.1:7233)
 * if it answers, else a dev server of its own. `own` always starts one (a bench that needs
 * the server's settings known), with task-queue fairness unless `fairness` is false.
 */
export async function benchTemporal(opts: { own?: boolean; fairness?: boolean } = {}): Promise<{ address: string; stop(): Promise<void> }> {
  const configured = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  if (!opts.own && (await temporalAnswersAt(configured))) {
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
    fairness: opts.fairness ?? true,
  });
  return { address: server.address, stop: () => server.stop() };
}

export interface LoadResult {
  label: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** This (the servers') thread while the load ran: event-loop delay p99 and max, time in GC. */
  loopDelayP99: number;
  loopDelayMax: number;
  gcMs: number;
  gcMaxMs: number;
  /** CPU time this (the servers') thread spent per answered request, in µs: far less noisy than req/s on a shared machine. */
  cpuUsPerRequest: number;
}

/** USER_HZ, which Linux fixes at 100 on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** User + system CPU time in a /proc `stat` file (a process's or a thread's), in ms; undefined when unreadable. */
function statCpuMs(file: string): { name: string; ms: number } | undefined {
  try {
    const stat = readFileSync(file, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      ms: ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND,
    };
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of this process's main thread so far, in ms (Linux /proc; NaN elsewhere). */
export function mainThreadCpuMs(): number {
  return statCpuMs(`/proc/self/task/${process.pid}/stat`)?.ms ?? Number.NaN;
}

/** CPU time (user + system, all threads) of process `pid` so far, in ms; 0 once it is gone. */
export function processCpuMs(pid: number | 'self'): number {
  return statCpuMs(`/proc/${pid}/stat`)?.ms ?? 0;
}

/** The Temporal dev server listening on `address` (its command line names the port). */
export function temporalServerPid(address: string): number | undefined {
  const port = address.split(':').pop();
  for (const dir of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = readFileSync(`/proc/${dir}/cmdline`, 'utf8').split('\0');
      if (cmd.some((a) => a.endsWith('temporal')) && cmd.includes('start-dev') && cmd.includes(String(port))) return Number(dir);
    } catch {
      // Gone while we looked.
    }
  }
  return undefined;
}

/**
 * CPU ms of this process's threads so far, summed by thread name without its number
 * (`main`, the SDK's workflow threads, the Rust core's, V8's GC helpers).
 */
export function threadCpuMs(): Map<string, number> {
  const byName = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    // Undefined when the thread ended while we looked.
    const t = statCpuMs(`/proc/self/task/${tid}/stat`);
    if (!t) continue;
    const name = Number(tid) === process.pid ? 'main' : t.name.replace(/[-_ ]?\d+$/, '');
    byName.set(name, (byName.get(name) ?? 0) + t.ms);
  }
  return byName;
}

/** CPU ms each thread name spent since `before` (a `threadCpuMs()` reading). */
export function threadCpuMsSince(before: Map<string, number>): Map<string, number> {
  return new Map([...threadCpuMs()].map(([name, ms]) => [name, ms - (before.get(name) ?? 0)]));
}

/** The `p`-th percentile (0–100, nearest rank) of `values`; 0 when there are none. */
/** When a Temporal history event happened, in milliseconds since the epoch (the server's clock). */
export function historyEventMs(e: { eventTime?: { seconds?: unknown; nanos?: number | null } | null }): number | undefined {
  return e.eventTime ? Number(e.eventTime.seconds) * 1000 + (e.eventTime.nanos ?? 0) / 1e6 : undefined;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Runs `fn(i)` for i in [0, n), in order, with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/**
 * Watches this thread while `during` runs: the event-loop delay histogram (how long a ready
 * callback waited: GC pauses and long synchronous work show here) and every GC pause.
 */
async function observeLoop<T>(during: () => Promise<T>) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const pauses: number[] = [];
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push(e.duration);
  });
  gc.observe({ entryTypes: ['gc'] });
  delay.enable();
  try {
    const result = await during();
    return {
      result,
      loopDelayP99: delay.percentile(99) / 1e6,
      loopDelayMax: delay.max / 1e6,
      gcMs: pauses.reduce((a, b) => a + b, 0),
      gcMaxMs: Math.max(0, ...pauses),
    };
  } finally {
    delay.disable();
    gc.disconnect();
  }
}

export async function load(
  label: string,
  url: string,
  opts: { durationSeconds: number; connections: number; headers?: Record<string, string> },
): Promise<LoadResult> {
  const cpuBefore = mainThreadCpuMs();
  const { result, ...loop } = await observeLoop(() =>
    autocannon({
      url,
      connections: opts.connections,
      // The load generator runs in its own thread so it does not share the servers' event loop.
      workers: 1,
      duration: opts.durationSeconds,
      headers: opts.headers ?? {},
    }),
  );
  const r: LoadResult = {
    label,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    ...loop,
    cpuUsPerRequest: ((mainThreadCpuMs() - cpuBefore) * 1000) / Math.max(1, result.requests.total),
  };
  log(
    `${label.padEnd(48)} ${r.requestsPerSecond.toFixed(0).padStart(6)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  CPU ${r.cpuUsPerRequest.toFixed(0)} µs/req  ` +
      `loop delay p99 ${r.loopDelayP99.toFixed(1)} ms max ${r.loopDelayMax.toFixed(0)} ms  GC ${r.gcMs.toFixed(0)} ms (max ${r.gcMaxMs.toFixed(1)})  non-2xx ${r.non2xx}`,
  );
  return r;
}

/** Median and range of one figure over a benchmark's rounds. */
export interface RoundStats {
  median: number;
  min: number;
  max: number;
  /** Largest distance from the median, as a fraction of it: above 0.15 is a finding to explain. */
  spread: number;
}

export const SPREAD_TO_EXPLAIN = 0.15;

export function roundStats(values: number[]): RoundStats {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const min = sorted[0]!;
  const max = sorted[sorted.length - 1]!;
  return { median, min, max, spread: median === 0 ? 0 : Math.max(median - min, max - median) / median };
}

/** `median X (min–max, ±N %)`, marked when the rounds disagree by more than ±15 %. */
export function formatStats(s: RoundStats, unit: string, digits = 0): string {
  const f = (v: number) => v.toFixed(digits);
  const flag = s.spread > SPREAD_TO_EXPLAIN ? '  ← spread > ±15 %' : '';
  return `median ${f(s.median)} ${unit} (${f(s.min)}–${f(s.max)}, ±${Math.round(s.spread * 100)} %)${flag}`;
}

/** Where and under what load a figure was taken: the figures are meaningless without it. */
export function machineLine(): string {
  const [l1, l5, l15] = os.loadavg().map((v) => v.toFixed(2));
  return `${new Date().toISOString()}  ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}, load average ${l1} ${l5} ${l15}`;
}

/** Runs `during` inside an inspector session opened by `begin`; `end` returns what `save` writes to `file`. */
async function profiled<T>(
  file: string | undefined,
  what: string,
  begin: (session: Session) => Promise<unknown>,
  end: (session: Session) => Promise<{ profile: unknown }>,
  during: () => Promise<T>,
): Promise<T> {
  if (!file) return during();
  const session = new Session();
  session.connect();
  await begin(session);
  try {
    return await during();
  } finally {
    const { profile } = await end(session);
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
    log(`${what} written to ${file}`);
  }
}

/**
 * CPU-profiles this thread while `during` runs (start-up and module loading left out,
 * unlike `node --cpu-prof`) and writes a .cpuprofile that Chrome DevTools opens and
 * bench/support/cpuprofile-summary.ts summarizes.
 */
export function cpuProfile<T>(file: string | undefined, during: () => Promise<T>): Promise<T> {
  return profiled(
    file,
    'CPU profile',
    async (session) => {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    },
    (session) => session.post('Profiler.stop'),
    during,
  );
}

/**
 * Samples this thread's allocations while `during` runs, including objects the GC has
 * already collected (what makes GC work), and writes a .heapprofile (Chrome DevTools).
 */
export function heapProfile<T>(file: string | undefined, during: () => Promise<T>): Promise<T> {
  return profiled(
    file,
    'heap allocation profile',
    async (session) => {
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    },
    (session) => session.post('HeapProfiler.stopSampling'),
    during,
  );
}

/** Busy CPU time of the whole machine so far, in ms (Linux /proc/stat; every process, ours and others'). */
export function machineBusyMs(): number {
  const cpu = os.cpus();
  return cpu.reduce((a, c) => a + c.times.user + c.times.nice + c.times.sys + c.times.irq, 0);
}

export function parseBenchArgs(args: string[], defaults: Record<string, number>): Record<string, number> {
  const out = { ...defaults };
  for (const arg of args) {
    const m = /^--([a-z-]+)=(\d+)$/.exec(arg);
    if (m && m[1]! in out) out[m[1]!] = Number(m[2]);
  }
  return out;
}

/** The value of `--name VALUE` or `--name=VALUE`, undefined when absent. */
export function optionArg(args: string[], name: string): string | undefined {
  const eq = args.find((a) => a.startsWith(`--${name}=`));
  if (eq) return eq.slice(name.length + 3);
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

/** A positive integer given as `--name N` or `--name=N`, else `fallback`; throws on anything else. */
export function positiveIntArg(args: string[], name: string, fallback: number): number {
  const raw = optionArg(args, name);
  const v = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer`);
  return v;
}
