/**
 * `npm run bench -- api [--duration=5] [--connections=50] [--rounds=5] [--only=ours] [--cpu-prof=FILE] [--heap-prof=FILE] [--log-level=info]`
 * Same connections, same duration, same run:
 *  (a) floor:   bare Koa answering the workflow row by primary key with one raw `pg` query
 *  (b) ours:    GET /v1/workflows/{id} with a real API key, rate limiting and the database
 *  (c) ceiling: bare Koa answering a fixed JSON object (context only)
 * After a short warm-up of each, `rounds` interleaved rounds (the order rotates each round,
 * so background load on a shared machine falls on every target alike). Prints per target
 * the median and range of req/s and of p99 over the rounds, this thread's event-loop delay
 * and GC time, then the p99 ratio and last `ratio=<median ours / median floor>`.
 * Target: ratio ≥ 0.8 with our p99 ≤ 2× the floor's.
 * `--only=floor|ours|ceiling` loads only that one; `--cpu-prof=FILE` CPU-profiles this thread (the servers)
 * during the measured rounds, `--heap-prof=FILE` samples its allocations; `--log-level=info`
 * writes the access log (to /dev/null) as production does, default silent (see docs/performance.md).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { Pool } from 'pg';
import { createApiServices, createApp } from '../src/app';
import { bufferedDestination, createLogger } from '../src/logger';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { WorkflowService } from '../src/modules/workflows/workflow.service';
import { closeServices, createServices } from '../src/services';
import { benchDatabase, benchTemporal, cpuProfile, formatStats, heapProfile, load, type LoadResult, log, machineLine, parseBenchArgs, roundStats } from './lib';

function summarize(label: string, rs: LoadResult[]) {
  const rps = roundStats(rs.map((r) => r.requestsPerSecond));
  const p99 = roundStats(rs.map((r) => r.p99));
  const loop = roundStats(rs.map((r) => r.loopDelayP99));
  const cpu = roundStats(rs.map((r) => r.cpuUsPerRequest));
  log(`${label}`);
  log(`    req/s ${formatStats(rps, 'req/s')}`);
  log(`    p99   ${formatStats(p99, 'ms')}   p50 median ${roundStats(rs.map((r) => r.p50)).median} ms   loop delay p99 median ${loop.median.toFixed(1)} ms`);
  log(`    CPU   ${formatStats(cpu, 'µs/req')} (the servers' thread)`);
  return { rps, p99, cpu };
}

const listen = async (app: Koa): Promise<{ server: Server; url: string }> => {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};
const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));

export async function run(args: string[]) {
  const { duration = 5, connections = 50, rounds = 5 } = parseBenchArgs(args, { duration: 5, connections: 50, rounds: 5 });
  const option = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const only = option('only');
  const profileFile = option('cpu-prof');
  const heapFile = option('heap-prof');
  // `silent` compares the request paths alone; `info` adds what production pays per request: the access-log line (buffered, as
  // production writes it, to /dev/null).
  const logLevel = option('log-level') ?? 'silent';
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const high = '100000000';
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporal.address,
    LOG_LEVEL: logLevel,
    REDIS_KEY_PREFIX: `wfa-bench:${Date.now()}:`,
    RATE_LIMIT_CREDENTIAL_PER_HOUR: high,
    RATE_LIMIT_RESOURCE_READ_PER_HOUR: high,
  });
  const orm = await createOrm(entities, db.url, config.DATABASE_POOL_MAX);
  await migrate(orm);
  const services = await createServices(config, { orm, logger: createLogger(logLevel, bufferedDestination('/dev/null')) });
  const keys = new ApiKeyService(orm.em.fork());
  const org = await keys.ensureOrganization('bench');
  const { key } = await keys.create(org.id, 'bench', 'read');
  const wf = await new WorkflowService(orm.em.fork()).create(org.id, {
    name: 'Bench workflow',
    description: 'Benchmarked by primary key',
    channel: 'whatsapp',
    configuration: { nodes: [{ id: 'hello', type: 'message', content: 'Hello!' }] },
  });

  const pool = new Pool({ connectionString: db.url, max: config.DATABASE_POOL_MAX });
  // An idle connection cut when the bench drops its database must not end the process.
  pool.on('error', () => undefined);
  const floorApp = new Koa();
  floorApp.use(async (ctx) => {
    const { rows } = await pool.query('select * from workflows where id = $1 and deleted_at is null', [wf.id]);
    ctx.body = { data: rows[0] };
  });
  const ceilingApp = new Koa();
  ceilingApp.use((ctx) => {
    ctx.body = { data: { id: wf.id, name: 'Bench workflow', status: 'draft' } };
  });

  const floor = await listen(floorApp);
  const ours = await listen(createApp(await createApiServices(services)).app);
  const ceiling = await listen(ceilingApp);
  log(machineLine());
  log(`${rounds} interleaved rounds of ${duration} s per target, ${connections} connections`);
  try {
    const opts = { durationSeconds: duration, connections };
    const all: Array<{ label: string; url: string; headers: Record<string, string> }> = [
      { label: '(a) bare Koa + raw pg by primary key', url: `${floor.url}/`, headers: {} },
      { label: '(b) GET /v1/workflows/{id} (auth, limits, db)', url: `${ours.url}/v1/workflows/${wf.id}`, headers: { authorization: `Bearer ${key}` } },
      { label: '(c) bare Koa fixed JSON (ceiling)', url: `${ceiling.url}/`, headers: {} },
    ];
    const targets = only ? [all[['floor', 'ours', 'ceiling'].indexOf(only)]!].filter(Boolean) : all;
    if (targets.length === 0) throw new Error('--only takes floor, ours or ceiling');
    // Warm-up: JIT, pool connections, Redis script cache; not counted.
    for (const t of targets) await load(`warm-up ${t.label}`, t.url, { durationSeconds: 2, connections, headers: t.headers });
    const results = targets.map(() => [] as LoadResult[]);
    await heapProfile(heapFile, () => cpuProfile(profileFile, async () => {
      for (let round = 0; round < rounds; round++) {
        for (let k = 0; k < targets.length; k++) {
          const i = (round + k) % targets.length;
          const t = targets[i]!;
          results[i]!.push(await load(t.label, t.url, { ...opts, headers: t.headers }));
        }
      }
    }));
    log(machineLine());
    if (results.flat().some((r) => r.non2xx > 0)) throw new Error('non-2xx answers: the figures are not comparable');
    const summaries = results.map((rs, i) => summarize(targets[i]!.label, rs));
    if (only) return;
    const [a, b] = summaries;
    const perRound = roundStats(results[1]!.map((r, i) => r.requestsPerSecond / results[0]![i]!.requestsPerSecond));
    log(`per-round ratio ${formatStats(perRound, '', 2)}`);
    log(`CPU per request floor / ours = ${(a!.cpu.median / b!.cpu.median).toFixed(2)} (what the ratio would be if both were CPU-bound on this thread alone)`);
    log(`p99 ours / floor = ${(b!.p99.median / a!.p99.median).toFixed(2)} (median p99 ${b!.p99.median} ms vs ${a!.p99.median} ms; target ≤ 2)`);
    log(`ratio=${(b!.rps.median / a!.rps.median).toFixed(2)}`);
  } finally {
    await Promise.all([close(floor.server), close(ours.server), close(ceiling.server)]);
    await pool.end();
    await closeServices(services);
    await db.drop();
    await temporal.stop();
  }
}
