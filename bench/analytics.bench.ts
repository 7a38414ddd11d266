/**
 * `npm run bench -- analytics [--executions=2000000] [--span=90] [--rounds=5] [--realtime=200] [--writes=40]`
 *
 * Seeds one organization with N executions (2 steps and 2 messages each) spread over
 * `span` days through COPY (rollup triggers off, then `analytics_rebuild()`, exactly what the
 * migration's backfill does), then, in the same run, for the last 30 days and the last 365:
 *  (a) raw:  the exact answer of the workflow-analytics and performance questions for one
 *            workflow over the period, in SQL over executions / steps / messages
 *            (percentile_cont, count(distinct)), with a covering index made for it;
 *  (b) ours: GET /v1/analytics/workflows/{id} and …/performance for the same period
 *            through the API (auth, rate limits, rollups).
 * Median of `rounds` interleaved rounds each. Also prints p50/p99 of GET /v1/analytics/realtime
 * and the write-side cost of the rollups: `writes` POST /v1/messages (each starting an
 * execution) and as many finishes (2 steps and the final status, in one transaction, as the
 * worker writes them) per round, with the analytics triggers on and off, interleaved.
 * A smaller `executions` (and `span`) checks the direction on a loaded machine.
 * `--keep=1` keeps the seeded database (its URL is printed); `--reuse-db=NAME` measures such a
 * kept database again without seeding (migrations still run, so a new rollup is backfilled by
 * its migration), and keeps it.
 * Last line: ratio=<raw time / API time> of the 30-day case (the 365-day one on the line above).
 * Floor ≥ 1.0, goal ≥ 10.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Client, Pool } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { createApiServices, createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { WorkflowService } from '../src/modules/workflows/workflow.service';
import { closeServices, createServices } from '../src/services';
import { benchDatabase, benchTemporal, log, optionArg, parseBenchArgs } from './lib';

const DAY = 86_400_000;
const CHANNELS = ['whatsapp', 'instagram', 'voice'];
const ERRORS = ['timeout', 'api_error', 'validation_error'];

/** Deterministic pseudo-random numbers (mulberry32), so every run seeds the same data. */
function rng(seed: number) {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Streams `rows` CSV lines produced by `line(i)` into `copy` through one COPY. */
async function copy(client: Client, sql: string, rows: number, line: (i: number) => string) {
  let i = 0;
  const source = new Readable({
    read() {
      if (i >= rows) {
        this.push(null);
        return;
      }
      let chunk = '';
      for (let n = 0; n < 5000 && i < rows; n++, i++) chunk += line(i);
      this.push(chunk);
    },
  });
  await pipeline(source, client.query(copyFrom(`${sql} from stdin with (format csv)`)));
}

const pad = (n: number) => String(n).padStart(10, '0');

async function seed(dbUrl: string, orgId: string, workflowIds: string[], n: number, span: number) {
  const client = new Client({ connectionString: dbUrl });
  // A failure surfaces as the rejected query; the database drop at the end must not crash the process.
  client.on('error', () => undefined);
  await client.connect();
  // Bulk load without the row triggers (and FK triggers); the rollups are rebuilt after.
  await client.query(`set session_replication_role = replica`);
  await client.query(`set maintenance_work_mem = '256MB'`);
  // Secondary indexes are dropped for the load and rebuilt once after (a sorted build beats row-by-row inserts).
  const { rows: secondary } = await client.query<{ name: string; def: string }>(
    `select i.indexname as name, i.indexdef as def from pg_indexes i
      where i.schemaname = 'public' and i.tablename in ('executions', 'messages', 'execution_steps', 'customers')
        and not exists (select 1 from pg_constraint c where c.conname = i.indexname)`,
  );
  for (const ix of secondary) await client.query(`drop index ${ix.name}`);
  const now = Date.now();
  const start = now - span * DAY;
  const customers = Math.max(1000, Math.floor(n / 10));
  const random = rng(42);
  const t0 = Date.now();
  await copy(client, 'copy customers (id, organization_id, channel, external_id, first_seen_at, created_at)', customers, (i) => {
    const at = new Date(start + (i / customers) * (span * 2 / 3) * DAY).toISOString();
    return `cus_b${pad(i)},${orgId},${CHANNELS[i % 3]},ext-${i},${at},${at}\n`;
  });
  // Executions in time order (ids ascend with time, so every index grows at its end), kept
  // in typed arrays for the steps and messages that follow.
  const STATUSES = ['success', 'failed', 'cancelled', 'running'];
  const status = new Uint8Array(n);
  const customer = new Int32Array(n);
  const duration = new Int32Array(n);
  const startedAt = (i: number) => start + (i / n) * span * DAY;
  for (let i = 0; i < n; i++) {
    const r = random();
    // A workflow serves one channel: its customers are those of that channel (customer c is on channel c % 3).
    customer[i] = Math.floor(random() * Math.floor(customers / 3)) * 3 + ((i % workflowIds.length) % 3);
    status[i] = now - startedAt(i) < 3600_000 && r < 0.2 ? 3 : r < 0.85 ? 0 : r < 0.95 ? 1 : 2;
    // Log-normal durations around 3 s.
    const u = Math.max(1e-9, random());
    duration[i] = Math.max(100, Math.min(600_000, Math.round(3000 * Math.exp(Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random())))));
  }
  await copy(
    client,
    `copy executions (id, organization_id, workflow_id, revision, trigger_id, customer_id, channel, status, started_at, completed_at, duration_ms,
                      error_type, message_id, temporal_started_at)`,
    n,
    (i) => {
      const st = STATUSES[status[i]!]!;
      const fin = st !== 'running';
      const ms = startedAt(i);
      const started = new Date(ms).toISOString();
      const c = customer[i]!;
      return `exec_b${pad(i)},${orgId},${workflowIds[i % workflowIds.length]},1,${i % 2 === 0 ? `trg_b${i % workflowIds.length}` : ''},cus_b${pad(c)},${CHANNELS[c % 3]},${st},${started},${
        fin ? new Date(ms + duration[i]!).toISOString() : ''
      },${fin ? duration[i] : ''},${st === 'failed' ? ERRORS[i % 3] : ''},msg_b${pad(2 * i)},${started}\n`;
    },
  );
  await copy(client, 'copy execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, completed_at, duration_ms)', 2 * n, (j) => {
    const i = j >> 1;
    const second = j % 2 === 1;
    const at = new Date(startedAt(i) + (second ? 50 : 0)).toISOString();
    const failed = second && status[i] === 1;
    return `step_b${pad(j)},exec_b${pad(i)},${orgId},${second ? 'answer' : 'greet'},message,${failed ? 'failed' : 'completed'},${at},${at},${second ? duration[i]! - 50 : 50}\n`;
  });
  await copy(client, 'copy messages (id, organization_id, customer_id, channel, direction, text, execution_id, created_at)', 2 * n, (j) => {
    const i = j >> 1;
    const c = customer[i]!;
    const out = j % 2 === 1;
    const at = new Date(startedAt(i) + (out ? 800 : -200)).toISOString();
    return `msg_b${pad(j)},${orgId},cus_b${pad(c)},${CHANNELS[c % 3]},${out ? 'outbound' : 'inbound'},hello,exec_b${pad(i)},${at}\n`;
  });
  for (const ix of secondary) await client.query(ix.def);
  log(`seeded ${customers} customers, ${n} executions, ${2 * n} steps, ${2 * n} messages by COPY (and rebuilt their indexes) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const t1 = Date.now();
  await client.query('set session_replication_role = origin');
  await client.query('select analytics_rebuild()');
  log(`rollups rebuilt (the backfill) in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
  const t2 = Date.now();
  // The raw baseline's best index: every column its questions read, for index-only scans.
  await client.query(
    `create index bench_raw_idx on executions (organization_id, workflow_id, started_at) include (status, duration_ms, customer_id, error_type, channel)`,
  );
  // The visibility map lets the baseline's scans be index-only.
  await client.query('vacuum analyze executions, analytics_hourly, analytics_node_hourly, analytics_customer_days, analytics_daily, analytics_customer_returns');
  await client.query('analyze');
  log(`baseline index + vacuum analyze in ${((Date.now() - t2) / 1000).toFixed(1)} s`);
  await client.end();
}

/** The exact answers, in SQL over the facts, of what the two API calls answer. */
async function rawAnswers(client: Pool, orgId: string, wf: string, from: Date, to: Date) {
  const p = [orgId, wf, from, to];
  const prevFrom = new Date(2 * from.getTime() - to.getTime());
  const range = `organization_id = $1 and workflow_id = $2 and started_at >= $3 and started_at < $4`;
  const counters = `count(*) as total, count(*) filter (where status = 'success') as success, count(*) filter (where status = 'failed') as failed,
                    avg(duration_ms) filter (where status in ('success', 'failed')) as avg_ms`;
  await Promise.all([
    // Workflow analytics: totals, distinct customers, channels, daily buckets, messages, previous period.
    client.query(`select ${counters}, count(distinct customer_id) from executions where ${range}`, p),
    client.query(`select channel, count(*) from executions where ${range} group by 1`, p),
    client.query(`select date_trunc('day', started_at, 'UTC'), ${counters}, count(distinct customer_id) from executions where ${range} group by 1`, p),
    client.query(
      `select date_trunc('day', m.created_at, 'UTC'), count(*) filter (where m.direction = 'outbound'), count(*) filter (where m.direction = 'inbound')
         from messages m join executions e on e.id = m.execution_id
        where e.organization_id = $1 and e.workflow_id = $2 and m.created_at >= $3 and m.created_at < $4 group by 1`,
      p,
    ),
    client.query(`select ${counters} from executions where ${range}`, [orgId, wf, prevFrom, from]),
  ]);
  await Promise.all([
    // Performance: exact percentiles, throughput, error types, nodes, channels.
    client.query(
      `select percentile_cont(array[0.5, 0.95, 0.99]) within group (order by duration_ms), avg(duration_ms),
              count(*) filter (where error_type = 'timeout'), count(*) filter (where error_type = 'api_error'), count(*) filter (where error_type = 'validation_error')
         from executions where ${range} and status in ('success', 'failed')`,
      p,
    ),
    client.query(`select extract(hour from started_at at time zone 'UTC'), count(*) from executions where ${range} group by 1`, p),
    client.query(`select date_trunc('hour', started_at, 'UTC'), count(*) from executions where ${range} group by 1 order by 2 desc limit 1`, p),
    client.query(
      `select s.node_id, s.type, count(*), count(*) filter (where s.status = 'failed'), avg(s.duration_ms)
         from executions e join execution_steps s on s.execution_id = e.id where e.organization_id = $1 and e.workflow_id = $2 and e.started_at >= $3 and e.started_at < $4
        group by 1, 2`,
      p,
    ),
    client.query(`select channel, ${counters} from executions where ${range} group by 1`, p),
  ]);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

/** Every call of `f` timed, in ms. */
async function timeEach(n: number, f: (i: number) => Promise<void>) {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    out.push(performance.now() - t);
  }
  return out;
}

/**
 * The write-side cost of the rollups: POST /v1/messages starting an execution, and the
 * execution's finish (its 2 steps and final status in one transaction, the rows the worker
 * writes), with the analytics triggers enabled and disabled, alternating per round so the
 * machine's background load falls on both.
 */
async function writeCost(base: string, headers: Record<string, string>, pool: Pool, orgId: string, rounds: number, n: number) {
  // Step ids of this run: a reused database (--reuse-db) holds the earlier runs' steps.
  const run = Date.now().toString(36);
  const { rows: triggers } = await pool.query<{ tbl: string; name: string }>(
    `select tgrelid::regclass::text as tbl, tgname as name from pg_trigger where tgname like '%\_analytics%' and not tgisinternal`,
  );
  const setTriggers = async (on: boolean) => {
    for (const t of triggers) await pool.query(`alter table ${t.tbl} ${on ? 'enable' : 'disable'} trigger ${t.name}`);
  };
  const times = { on: { post: [] as number[], finish: [] as number[] }, off: { post: [] as number[], finish: [] as number[] } };
  for (let r = 0; r < rounds; r++) {
    for (const mode of r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      await setTriggers(mode === 'on');
      const executions: string[] = [];
      times[mode].post.push(
        ...(await timeEach(n, async (i) => {
          // One message per customer and round: new customers in the first round, returning
          // ones after (each customer's execution of the round before was finished below: a
          // second message while it ran would be skipped, one conversation per customer).
          const res = await fetch(`${base}/v1/messages`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: JSON.stringify({ channel: 'whatsapp', customer_id: `bw-${mode}-${i}`, message: 'benchwrite' }),
          });
          const body = (await res.json()) as { data?: { executions?: Array<{ id: string | null; action: string }> } };
          if (res.status !== 201) throw new Error(`/v1/messages: ${res.status} ${JSON.stringify(body)}`);
          executions.push(...(body.data?.executions ?? []).filter((e) => e.action === 'started').map((e) => e.id!));
        })),
      );
      if (executions.length !== n) throw new Error(`expected ${n} executions started, got ${executions.length}`);
      times[mode].finish.push(
        ...(await timeEach(n, async (i) => {
          const c = await pool.connect();
          try {
            await c.query('begin');
            for (const [k, node] of ['greet', 'answer'].entries()) {
              await c.query(
                `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, completed_at, duration_ms)
                 values ($1, $2, $3, $4, 'message', 'completed', now(), now(), 40)`,
                [`step_bw_${run}_${mode}_${r}_${i}_${k}`, executions[i], orgId, node],
              );
            }
            await c.query(`update executions set status = 'success', completed_at = now(), duration_ms = 900 where id = $1 and status = 'running'`, [executions[i]]);
            await c.query('commit');
          } finally {
            c.release();
          }
        })),
      );
    }
  }
  await setTriggers(true);
  return times;
}

export async function run(args: string[]) {
  const { executions = 2_000_000, span = 90, rounds = 5, realtime = 200, writes = 40, keep = 0 } = parseBenchArgs(args, {
    executions: 2_000_000,
    span: 90,
    rounds: 5,
    realtime: 200,
    writes: 40,
    keep: 0,
  });
  // A kept database (--keep=1) measured again: no seed, not dropped.
  const reuse = optionArg(args, 'reuse-db');
  const db = reuse ? { url: `postgresql://postgres@127.0.0.1:5432/${reuse}`, drop: async () => undefined } : await benchDatabase();
  const temporal = await benchTemporal();
  const high = '100000000';
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporal.address,
    // Its own task queue: the executions POST /v1/messages starts are never picked up by a worker.
    TEMPORAL_TASK_QUEUE: `bench-analytics-${Date.now()}`,
    LOG_LEVEL: 'silent',
    REDIS_KEY_PREFIX: `wfa-bench:${Date.now()}:`,
    RATE_LIMIT_CREDENTIAL_PER_HOUR: high,
    RATE_LIMIT_ANALYTICS_HISTORICAL_PER_HOUR: high,
    RATE_LIMIT_ANALYTICS_REALTIME_PER_HOUR: high,
  });
  const orm = await createOrm(entities, db.url, config.DATABASE_POOL_MAX);
  let server: Server | undefined;
  // Migrated first: the services read tables at start (the OAuth server's keys).
  await migrate(orm);
  const services = await createServices(config, { orm });
  try {
    const keys = new ApiKeyService(orm.em.fork());
    const org = await keys.ensureOrganization('bench');
    const { key } = await keys.create(org.id, 'bench', 'read');
    const { key: writeKey } = await keys.create(org.id, 'bench-writes', 'admin');
    const workflows: string[] = [];
    if (reuse) {
      const rows = await orm.em
        .getConnection()
        .execute<Array<{ id: string }>>(`select id from workflows where organization_id = ? and name like 'Bench _' order by name`, [org.id]);
      workflows.push(...rows.map((r) => r.id));
      if (workflows.length !== 5) throw new Error(`--reuse-db=${reuse}: not a kept analytics bench database`);
    }
    for (let w = 0; w < 5 && !reuse; w++) {
      const wf = await new WorkflowService(orm.em.fork()).create(org.id, {
        name: `Bench ${w}`,
        channel: 'whatsapp',
        configuration: {
          nodes: [
            { id: 'greet', type: 'message', content: 'Hi', next: 'answer' },
            { id: 'answer', type: 'message', content: 'Done' },
          ],
        },
      });
      workflows.push(wf.id);
    }
    if (!reuse) await seed(db.url, org.id, workflows, executions, span);

    server = createApp(await createApiServices(services)).app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server!.once('listening', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const headers = { authorization: `Bearer ${key}` };
    const wf = workflows[0]!;
    // A pool as large as the API's, so the raw queries run in parallel as the API's do.
    const client = new Pool({ connectionString: db.url, max: config.DATABASE_POOL_MAX });
    client.on('error', () => undefined);

    const measure = async (days: number) => {
      const to = new Date();
      const from = new Date(to.getTime() - days * DAY);
      const q = `start_date=${from.toISOString()}&end_date=${to.toISOString()}`;
      const [count] = await orm.em.getConnection().execute<Array<{ n: number }>>(`select count(*)::int as n from executions where workflow_id = ? and started_at >= ?`, [wf, from]);
      const [rows] = await orm.em.getConnection().execute<Array<{ daily: number; hourly: number; returns: number }>>(
        `select (select count(*) from analytics_daily where workflow_id = ? and day >= ?::date)::int as daily,
                (select count(*) from analytics_hourly where workflow_id = ? and hour >= ?)::int as hourly,
                (select count(*) from analytics_customer_returns where workflow_id = ? and channel = '' and day >= ?::date)::int as returns`,
        [wf, from.toISOString().slice(0, 10), wf, from, wf, from.toISOString().slice(0, 10)],
      );
      log(`${days}-day case: ${count?.n} executions of the measured workflow; rollup rows of the period: daily ${rows?.daily}, customer returns ${rows?.returns} (hourly ${rows?.hourly})`);
      const api = async () => {
        const t = performance.now();
        for (const path of [`/v1/analytics/workflows/${wf}?${q}`, `/v1/analytics/workflows/${wf}/performance?${q}`]) {
          const res = await fetch(`${base}${path}`, { headers });
          if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
          await res.json();
        }
        return performance.now() - t;
      };
      const raw = async () => {
        const t = performance.now();
        await rawAnswers(client, org.id, wf, from, to);
        return performance.now() - t;
      };
      await api();
      await raw();
      // Interleaved, so background load on the shared machine falls on both sides.
      const apiTimes: number[] = [];
      const rawTimes: number[] = [];
      for (let r = 0; r < rounds; r++) {
        apiTimes.push(await api());
        rawTimes.push(await raw());
        log(`${days}-day round ${r + 1}: raw SQL ${rawTimes[r]!.toFixed(1)} ms, API ${apiTimes[r]!.toFixed(1)} ms`);
      }
      const rawMs = median(rawTimes);
      const apiMs = median(apiTimes);
      log(`${days}-day median over ${rounds} rounds: raw SQL (workflow + performance) ${rawMs.toFixed(1)} ms, API ${apiMs.toFixed(1)} ms, ratio ${(rawMs / apiMs).toFixed(2)}`);
      return rawMs / apiMs;
    };
    const ratio30 = await measure(30);
    const ratio365 = await measure(365);

    const rt: number[] = [];
    for (let i = 0; i < realtime; i++) {
      const t = performance.now();
      const res = await fetch(`${base}/v1/analytics/realtime`, { headers });
      await res.json();
      if (res.status !== 200) throw new Error(`realtime: ${res.status}`);
      rt.push(performance.now() - t);
    }
    log(`GET /v1/analytics/realtime x${realtime}: p50 ${percentile(rt, 0.5).toFixed(1)} ms, p99 ${percentile(rt, 0.99).toFixed(1)} ms`);

    if (writes > 0) {
      const admin = { authorization: `Bearer ${writeKey}` };
      // A reused database keeps the earlier runs' keyword workflow: retired, so each message starts one execution.
      if (reuse) await client.query(`update workflows set deleted_at = now() where organization_id = $1 and name like 'Bench writes%' and deleted_at is null`, [org.id]);
      const created = await fetch(`${base}/v1/workflows`, {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json' },
        body: JSON.stringify({
          // A name of its own per run: a reused database keeps the earlier runs' workflows.
          name: `Bench writes ${Date.now()}`,
          channel: 'whatsapp',
          configuration: { trigger: { type: 'keyword', keywords: ['benchwrite'] }, nodes: [{ id: 'greet', type: 'message', content: 'Hi' }] },
        }),
      });
      const writesWf = ((await created.json()) as { data: { id: string } }).data.id;
      const activated = await fetch(`${base}/v1/workflows/${writesWf}/activate`, { method: 'POST', headers: admin });
      if (activated.status !== 200) throw new Error(`activate: ${activated.status}`);
      const w = await writeCost(base, admin, client, org.id, rounds, writes);
      const line = (what: string, on: number[], off: number[], of: number) => {
        const [p50on, p50off] = [percentile(on, 0.5), percentile(off, 0.5)];
        log(
          `write cost, ${what} x${on.length}: p50 ${p50on.toFixed(2)} ms with the rollup triggers, ${p50off.toFixed(2)} ms without: ` +
            `+${(p50on - p50off).toFixed(2)} ms (${(((p50on - p50off) / of) * 100).toFixed(1)} % of POST /v1/messages p50 ${of.toFixed(2)} ms)`,
        );
      };
      const postP50 = percentile(w.on.post, 0.5);
      line('POST /v1/messages (starts an execution)', w.on.post, w.off.post, postP50);
      line('finished execution (2 steps + final status)', w.on.finish, w.off.finish, postP50);
    }
    await client.end();
    log(`ratio365=${ratio365.toFixed(2)}`);
    log(`ratio=${ratio30.toFixed(2)}`);
  } finally {
    if (server) await new Promise<void>((r) => server!.close(() => r()));
    await closeServices(services);
    if (keep || reuse) log(`kept ${db.url}`);
    else await db.drop();
    await temporal.stop();
  }
}
