/**
 * `npm run bench -- api [--duration=10] [--connections=50]`
 * Same connections, same duration, same run:
 *  (a) floor:   bare Koa answering the workflow row by primary key with one raw `pg` query
 *  (b) ours:    GET /v1/workflows/{id} with a real API key, rate limiting and the ORM
 *  (c) ceiling: bare Koa answering a fixed JSON object (context only)
 * Last line: ratio=<b/a>. Target ≥ 0.5.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { Pool } from 'pg';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { WorkflowService } from '../src/modules/workflows/workflow.service';
import { closeServices, createServices } from '../src/services';
import { benchDatabase, benchTemporal, load, type LoadResult, log, parseBenchArgs } from './lib';

function summarize(label: string, rs: LoadResult[]): LoadResult {
  const mean = (f: (r: LoadResult) => number) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
  const r = { label, requestsPerSecond: mean((x) => x.requestsPerSecond), p50: mean((x) => x.p50), p99: Math.max(...rs.map((x) => x.p99)), non2xx: rs.reduce((s, x) => s + x.non2xx, 0) };
  log(`mean ${label.padEnd(44)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s   p99 ${r.p99} ms`);
  return r;
}

const listen = async (app: Koa): Promise<{ server: Server; url: string }> => {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
};
const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));

export async function run(args: string[]) {
  const { duration = 5, connections = 50, rounds = 3 } = parseBenchArgs(args, { duration: 5, connections: 50, rounds: 3 });
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const high = '100000000';
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporal.address,
    LOG_LEVEL: 'silent',
    REDIS_KEY_PREFIX: `wfa-bench:${Date.now()}:`,
    RATE_LIMIT_CREDENTIAL_PER_HOUR: high,
    RATE_LIMIT_RESOURCE_READ_PER_HOUR: high,
  });
  const orm = await createOrm(db.url, config.DATABASE_POOL_MAX);
  await migrate(orm);
  const services = await createServices(config, { orm });
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
  const ours = await listen(createApp(services).app);
  const ceiling = await listen(ceilingApp);
  log(`${rounds} interleaved rounds of ${duration} s per target, ${connections} connections`);
  try {
    const opts = { durationSeconds: duration, connections };
    const targets: Array<{ label: string; url: string; headers: Record<string, string> }> = [
      { label: '(a) bare Koa + raw pg by primary key', url: `${floor.url}/`, headers: {} },
      { label: '(b) GET /v1/workflows/{id} (auth, limits, ORM)', url: `${ours.url}/v1/workflows/${wf.id}`, headers: { authorization: `Bearer ${key}` } },
      { label: '(c) bare Koa fixed JSON (ceiling)', url: `${ceiling.url}/`, headers: {} },
    ];
    // Interleaving the targets spreads any background load on the machine over all three.
    const results = targets.map(() => [] as LoadResult[]);
    for (let round = 0; round < rounds; round++) {
      for (const [i, t] of targets.entries()) results[i]!.push(await load(t.label, t.url, { ...opts, headers: t.headers }));
    }
    const [a, b, c] = results.map((rs, i) => summarize(targets[i]!.label, rs));
    if ([a!, b!, c!].some((r) => r.non2xx > 0)) throw new Error('non-2xx answers: the figures are not comparable');
    log(`ratio=${(b!.requestsPerSecond / a!.requestsPerSecond).toFixed(2)}`);
  } finally {
    await Promise.all([close(floor.server), close(ours.server), close(ceiling.server)]);
    await pool.end();
    await closeServices(services);
    await db.drop();
    await temporal.stop();
  }
}
