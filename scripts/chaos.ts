/**
 * `npm run chaos`: the outage drill, automated. Starts a private PostgreSQL (initdb into a
 * temporary directory, as the `postgres` OS user when run as root), a private Redis and a
 * private Temporal dev server, all on free loopback ports; runs the API and the worker as
 * separate processes; sends inbound messages continuously; then, one after the other,
 * SIGKILLs PostgreSQL, Temporal and Redis for CHAOS_OUTAGE_S seconds (default 30; Redis
 * at most 15) and restarts them, and SIGKILLs the worker and the API and restarts them.
 *
 * Like a real client, it resends every message that was not answered 2xx (a 503, or no
 * answer because the API died) once everything is back, with the same
 * `provider_message_id`. Then it checks, directly in PostgreSQL:
 * - nothing lost: every accepted message's execution ended `success`;
 * - nothing doubled: each step recorded once, each message sent once, one execution per
 *   provider message;
 * - during the PostgreSQL outage the API answered 503 SERVICE_UNAVAILABLE, and during the
 *   Temporal outage 201, fast. Asserted loosely, because on a loaded 2-core machine even
 *   the warm-up's answers take hundreds of ms: median under 1 s and no answer held for
 *   5 s (a client's usual timeout; before, Temporal outages held requests up to 10 s).
 *   The measured p50/p99/max of every phase are printed (see docs/outages.md).
 * Exits 1 if a check fails. Takes about 5 minutes on a loaded 2-core machine (start-up and
 * draining the backlog take most of it).
 *
 * `npm run chaos -- --replicas 2` runs the replicated drill instead: 2 APIs and 2 workers,
 * one of each SIGKILLed mid-load (see `replicatedMain` below and scripts/lib/replicated-drill.ts).
 */
import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { DefaultLogger } from '@temporalio/worker';
import { findOrInstallTemporalCli } from './lib/temporal-cli';
import { generateSecretsKey } from '../src/secrets';
import { runReplicatedDrill } from './lib/replicated-drill';
import { bundleWorkflows } from '../temporal/worker';
import { type DevServer, startTemporalDevServer } from './lib/temporal-dev-server';
import { freePort, type SpawnedProcess, spawnProcess } from '../test/helpers/process';

const OUTAGE_MS = Number(process.env.CHAOS_OUTAGE_S ?? 30) * 1000;
const REDIS_OUTAGE_MS = Math.min(OUTAGE_MS, 15_000);
/** Messages per second sent by the load loop (5 made the run last 7.7 min on a loaded 2-core machine: the backlog drains slowly). */
const RATE = Number(process.env.CHAOS_RATE ?? 3);
/** "Fast" for answers during an outage: the median under 1 s and nothing held up to a client's 5 s timeout. */
const FAST_MEDIAN_MS = 1000;
const CLIENT_TIMEOUT_MS = 5000;

const root = path.resolve(__dirname, '..');
const started = Date.now();
const log = (msg: string) => process.stdout.write(`[chaos +${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, fn: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}`);
}

// ---- PostgreSQL -----------------------------------------------------------------------

const isRoot = process.getuid?.() === 0;
const pgBin = (name: string) => `/usr/lib/postgresql/${readdirSync('/usr/lib/postgresql').sort().at(-1)}/bin/${name}`;
/** initdb refuses root: run the server binaries as the postgres OS user then. */
const asPostgres = (cmd: string, args: string[]): [string, string[]] => (isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]);

async function initPostgres(dir: string): Promise<string> {
  const data = path.join(dir, 'pgdata');
  if (isRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const init = spawnProcess(...asPostgres(pgBin('initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync']));
  const { code } = await init.exited;
  if (code !== 0) throw new Error(`initdb failed:\n${init.lines.join('\n')}`);
  return data;
}

function startPostgres(data: string, port: number): SpawnedProcess {
  return spawnProcess(
    ...asPostgres(pgBin('postgres'), [
      '-D', data, '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${path.dirname(data)}`,
      // fsync off only: a SIGKILLed server loses nothing it acknowledged (what is in the OS
      // page cache survives a process crash). synchronous_commit=off WOULD lose commits.
      '-c', 'fsync=off',
    ]),
  );
}

async function pgAnswers(port: number): Promise<boolean> {
  const c = new PgClient({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres`, connectionTimeoutMillis: 1000 });
  try {
    await c.connect();
    await c.query('select 1');
    return true;
  } finally {
    await c.end().catch(() => undefined);
  }
}

// ---- Load and results ---------------------------------------------------------------------

interface Outcome {
  phase: string;
  providerMessageId: string;
  status: number;
  ms: number;
  executionIds: string[];
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wfa-chaos-'));
  const [pgPort, redisPort, temporalPort, apiPort, metricsPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  const children: Array<() => Promise<unknown>> = [];
  let failed = false;
  let phase = 'start';
  const check = (ok: boolean, what: string) => {
    log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
    if (!ok) failed = true;
  };

  try {
    // Dependencies.
    const data = await initPostgres(dir);
    let pg = startPostgres(data, pgPort);
    children.push(() => pg.kill('SIGTERM'));
    await until('PostgreSQL', () => pgAnswers(pgPort));
    const startRedis = () => spawnProcess('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
    let redis = startRedis();
    children.push(() => redis.kill('SIGTERM'));
    const cli = await findOrInstallTemporalCli();
    if (!cli) throw new Error('the Temporal CLI is needed (see scripts/install-temporal-cli.ts)');
    const startTemporal = () =>
      startTemporalDevServer({ executable: cli, dbFile: path.join(dir, 'temporal.sqlite'), port: temporalPort, namespace: 'default' });
    let temporal: DevServer = await startTemporal();
    children.push(() => temporal.stop());
    log(`private PostgreSQL :${pgPort}, Redis :${redisPort}, Temporal :${temporalPort}`);

    // The service, as two processes.
    const env = {
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${pgPort}/wfa_chaos`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TEMPORAL_TASK_QUEUE: 'chaos',
      // The API and the worker refuse to start without a keyring.
      SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY ?? generateSecretsKey(),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      EXECUTION_RECONCILE_INTERVAL_MS: '1000',
      EXECUTION_RECONCILE_GRACE_MS: '2000',
      RATE_LIMIT_CREDENTIAL_PER_HOUR: '1000000',
      RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '1000000',
      RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '1000000',
    };
    const node = (args: string[], extra: Record<string, string>) => spawnProcess(process.execPath, ['--require', 'tsx/cjs', ...args], { cwd: root, env: { ...env, ...extra } });
    /** Every API and worker process started, for their outage log lines. */
    const started: Array<[string, SpawnedProcess]> = [];
    const startApi = async () => {
      const p = node(['src/main.ts', 'api'], { PORT: String(apiPort) });
      started.push(['api', p]);
      await p.waitForLine(/API listening/, 120_000);
      return p;
    };
    const startWorker = async () => {
      const p = node(['src/main.ts', 'worker'], { METRICS_PORT: String(metricsPort) });
      started.push(['worker', p]);
      await p.waitForLine(/worker running/, 120_000);
      return p;
    };
    let api = await startApi();
    children.push(() => api.kill('SIGTERM'));
    let worker = await startWorker();
    children.push(() => worker.kill('SIGTERM'));
    let workerRestarts = 0;
    const base = `http://127.0.0.1:${apiPort}`;

    const keyCli = spawnProcess(path.join(root, 'node_modules', '.bin', 'tsx'), ['scripts/cli.ts', 'api-keys', 'create', '--org', 'chaos', '--name', 'chaos', '--permission', 'admin'], { cwd: root, env });
    if ((await keyCli.exited).code !== 0) throw new Error(`key creation failed:\n${keyCli.lines.join('\n')}`);
    const key = keyCli.lines.filter((l) => l.trim() !== '').at(-1)!;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const wf = await (
      await fetch(`${base}/v1/workflows`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          name: 'Chaos',
          channel: 'whatsapp',
          configuration: {
            trigger: { type: 'keyword', keywords: ['hello'] },
            nodes: [
              { id: 'greet', type: 'message', content: 'Hi!', next: 'follow' },
              { id: 'follow', type: 'message', content: 'How can we help?' },
            ],
          },
        }),
      })
    ).json() as { data: { id: string } };
    await fetch(`${base}/v1/workflows/${wf.data.id}/activate`, { method: 'POST', headers });

    // Load: RATE messages per second, each with its own provider message id.
    const outcomes: Outcome[] = [];
    phase = 'warm-up';
    let seq = 0;
    const sendOne = async (providerMessageId: string, inPhase: string) => {
      const t0 = performance.now();
      let status = 0;
      let executionIds: string[] = [];
      try {
        const res = await fetch(`${base}/v1/messages`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ channel: 'whatsapp', customer_id: `cust-${providerMessageId}`, message: 'hello', provider_message_id: providerMessageId }),
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        const body = (await res.json().catch(() => undefined)) as { data?: { executions: Array<{ id: string }> } } | undefined;
        executionIds = body?.data?.executions.map((e) => e.id) ?? [];
      } catch {
        // No answer (the API was killed, or a timeout): resent later.
      }
      outcomes.push({ phase: inPhase, providerMessageId, status, ms: performance.now() - t0, executionIds });
    };
    let loading = true;
    const inFlight = new Set<Promise<void>>();
    const loadLoop = (async () => {
      while (loading) {
        const p = sendOne(`chaos-${++seq}`, phase).finally(() => inFlight.delete(p));
        inFlight.add(p);
        await sleep(1000 / RATE);
      }
    })();
    const ready = async () => {
      const r = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(3000) });
      return r.status === 200;
    };
    // A worker that died on its own (e.g. during the Temporal outage) is restarted, as a
    // supervisor would; the report counts it.
    const plannedExits = new Set<SpawnedProcess>();
    const superviseWorker = (p: SpawnedProcess) => {
      void p.exited.then(async () => {
        if (phase === 'done' || plannedExits.has(p)) return;
        log(`worker exited unexpectedly:\n${p.lines.slice(-15).join('\n')}\nrestarting it`);
        workerRestarts++;
        worker = await startWorker();
        superviseWorker(worker);
      });
    };
    superviseWorker(worker);

    await sleep(5_000);

    phase = 'postgres-down';
    log(`SIGKILL PostgreSQL for ${OUTAGE_MS / 1000} s`);
    await pg.kill('SIGKILL');
    await sleep(OUTAGE_MS);
    phase = 'postgres-recovering';
    pg = startPostgres(data, pgPort);
    await until('PostgreSQL back', () => pgAnswers(pgPort));
    await until('/readyz after PostgreSQL', ready);
    log('PostgreSQL back');

    phase = 'temporal-down';
    log(`SIGKILL Temporal for ${OUTAGE_MS / 1000} s`);
    await temporal.kill();
    await sleep(OUTAGE_MS);
    phase = 'temporal-recovering';
    temporal = await startTemporal();
    await until('/readyz after Temporal', ready);
    log('Temporal back');

    phase = 'redis-down';
    log(`SIGKILL Redis for ${REDIS_OUTAGE_MS / 1000} s`);
    await redis.kill('SIGKILL');
    await sleep(REDIS_OUTAGE_MS);
    phase = 'redis-recovering';
    redis = startRedis();
    await until('/readyz after Redis', ready);
    log('Redis back');

    phase = 'processes-killed';
    log('SIGKILL the worker and the API, restart them');
    plannedExits.add(worker);
    await Promise.all([worker.kill('SIGKILL'), api.kill('SIGKILL')]);
    [worker, api] = await Promise.all([startWorker(), startApi()]);
    superviseWorker(worker);
    await sleep(3_000);

    phase = 'done';
    loading = false;
    await loadLoop;
    await Promise.all(inFlight);

    // A client resends what was not accepted, with the same provider message id.
    const unanswered = outcomes.filter((o) => o.status < 200 || o.status >= 300);
    log(`resending ${unanswered.length} messages that were not accepted (${unanswered.filter((o) => o.status === 0).length} without an answer)`);
    for (let i = 0; i < unanswered.length; i += 10) {
      await Promise.all(unanswered.slice(i, i + 10).map((o) => sendOne(o.providerMessageId, 'resent')));
    }

    const stats = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b);
      const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
      return { n: s.length, p50: Math.round(at(0.5)), p99: Math.round(at(0.99)), max: Math.round(s.at(-1) ?? NaN) };
    };
    for (const p of [...new Set(outcomes.map((o) => o.phase))]) {
      const byStatus = new Map<number, number[]>();
      for (const o of outcomes.filter((x) => x.phase === p)) byStatus.set(o.status, [...(byStatus.get(o.status) ?? []), o.ms]);
      log(`phase ${p}: ${[...byStatus].map(([st, ms]) => `${st} ${JSON.stringify(stats(ms))}`).join('; ')}`);
    }

    // Every accepted message's executions, final.
    const accepted = new Map<string, Outcome>();
    for (const o of outcomes) if (o.status >= 200 && o.status < 300) accepted.set(o.providerMessageId, o);
    const executionIds = [...new Set([...accepted.values()].flatMap((o) => o.executionIds))];
    const db = new PgClient({ connectionString: env.DATABASE_URL });
    await db.connect();
    try {
      await until(
        'every execution to finish',
        async () => (await db.query("select count(*)::int as n from executions where status = 'running'")).rows[0].n === 0,
        180_000,
      ).catch(async (err: unknown) => {
        const running = (await db.query("select id, temporal_started_at, (select count(*) from execution_steps s where s.execution_id = e.id)::int as steps from executions e where status = 'running' limit 10")).rows;
        log(`still running: ${JSON.stringify(running)}`);
        log(`worker tail:\n${worker.lines.slice(-40).join('\n')}`);
        throw err;
      });
      const statuses = (await db.query('select status, count(*)::int as n from executions where id = any($1) group by 1', [executionIds])).rows;
      log(`executions: ${JSON.stringify(statuses)}`);
      check(accepted.size === seq, `every message accepted in the end (${accepted.size}/${seq})`);
      check(executionIds.length === accepted.size, `one execution per accepted message (${executionIds.length})`);
      const successes = statuses.find((r) => r.status === 'success')?.n ?? 0;
      check(successes === executionIds.length, `every accepted message ran to success (${successes}/${executionIds.length})`);
      const doubledSteps = (await db.query('select execution_id, node_id from execution_steps group by 1, 2 having count(*) > 1')).rows;
      check(doubledSteps.length === 0, `no step recorded twice (${doubledSteps.length})`);
      const stepCounts = (await db.query('select count(*)::int as n from execution_steps where execution_id = any($1)', [executionIds])).rows[0].n;
      check(stepCounts === executionIds.length * 2, `each execution recorded both steps (${stepCounts}/${executionIds.length * 2})`);
      const sent = (await db.query("select count(*)::int as n, count(distinct (execution_id, text))::int as d from messages where direction = 'outbound'")).rows[0];
      check(sent.n === sent.d && sent.n === executionIds.length * 2, `each message sent once (${sent.n} sent, ${sent.d} distinct)`);
      const doubled = (
        await db.query("select m.provider_message_id from messages m join executions e on e.message_id = m.id group by 1 having count(*) > 1")
      ).rows;
      check(doubled.length === 0, `one execution per provider message (${doubled.length} doubled)`);
      const inbound = (await db.query("select count(*)::int as n from messages where direction = 'inbound'")).rows[0].n;
      check(inbound === seq, `one inbound message per provider message id (${inbound}/${seq})`);
    } finally {
      await db.end();
    }

    // Answers during the outages.
    const pgDown = outcomes.filter((o) => o.phase === 'postgres-down');
    const pg503 = pgDown.filter((o) => o.status === 503);
    check(pg503.length >= pgDown.length * 0.9, `PostgreSQL down: answered 503 (${pg503.length}/${pgDown.length})`);
    const fast = (xs: Outcome[]) => stats(xs.map((o) => o.ms)).p50 < FAST_MEDIAN_MS && stats(xs.map((o) => o.ms)).max < CLIENT_TIMEOUT_MS;
    check(fast(pg503), `PostgreSQL down: 503s fast (${JSON.stringify(stats(pg503.map((o) => o.ms)))})`);
    const tDown = outcomes.filter((o) => o.phase === 'temporal-down');
    check(tDown.every((o) => o.status === 201), `Temporal down: every message answered 201 (${tDown.filter((o) => o.status === 201).length}/${tDown.length})`);
    check(fast(tDown), `Temporal down: 201s fast (${JSON.stringify(stats(tDown.map((o) => o.ms)))})`);
    const rDown = outcomes.filter((o) => o.phase === 'redis-down');
    check(rDown.every((o) => o.status === 201), `Redis down: every message answered 201 (${rDown.length})`);
    log(`worker restarted by the supervisor ${workerRestarts} time(s) outside the planned kill`);
    // Each outage is logged once per process, then its recovery.
    for (const [name, p] of started) {
      const outageLines = p.lines.filter((l) => /"msg":"(postgres|redis|temporal) (unavailable|recovered)"/.test(l));
      log(`${name} process logged: ${outageLines.map((l) => /"msg":"([^"]+)"/.exec(l)?.[1]).join(', ') || 'no outage'}`);
    }
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text());
    check(/activities_waiting_on_dependency\{dependency="postgres"\} 0/.test(metrics), 'worker /metrics: no activity left waiting');
  } finally {
    phase = 'done';
    for (const stop of children.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  log(failed ? 'FAILED' : 'all checks passed');
  process.exit(failed ? 1 : 0);
}

/**
 * `--replicas 2`: the replicated drill (scripts/lib/replicated-drill.ts) on a private
 * PostgreSQL (a fresh database: the four processes also race to migrate it), Redis and
 * Temporal. Sizes: CHAOS_MESSAGES (default 300) at CHAOS_RATE per second, CHAOS_FIRES
 * (60), CHAOS_TICKS (10), CHAOS_RATE_LIMIT (50).
 */
async function replicatedMain() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wfa-chaos-'));
  const [pgPort, redisPort, temporalPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const stops: Array<() => Promise<unknown>> = [];
  let failed = true;
  try {
    const data = await initPostgres(dir);
    const pg = startPostgres(data, pgPort);
    stops.push(() => pg.kill('SIGTERM'));
    await until('PostgreSQL', () => pgAnswers(pgPort));
    const redis = spawnProcess('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
    stops.push(() => redis.kill('SIGTERM'));
    const cli = await findOrInstallTemporalCli();
    if (!cli) throw new Error('the Temporal CLI is needed (see scripts/install-temporal-cli.ts)');
    const temporal = await startTemporalDevServer({ executable: cli, dbFile: path.join(dir, 'temporal.sqlite'), port: temporalPort, namespace: 'default' });
    stops.push(() => temporal.stop());
    log(`private PostgreSQL :${pgPort}, Redis :${redisPort}, Temporal :${temporalPort}`);
    // One webpack build for the four workers (and the restarted one), instead of one each.
    const bundlePath = path.join(dir, 'workflows.js');
    writeFileSync(bundlePath, (await bundleWorkflows({ logger: new DefaultLogger('WARN') })).code);

    const env = {
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${pgPort}/wfa_chaos`,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TEMPORAL_TASK_QUEUE: 'chaos',
      TEMPORAL_WORKFLOW_BUNDLE_PATH: bundlePath,
      // The webhooks' secrets are sealed: the four processes share one key (npm start would generate it).
      SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY ?? generateSecretsKey(),
    };
    const report = await runReplicatedDrill({
      env,
      async createKey() {
        const keyCli = spawnProcess(path.join(root, 'node_modules', '.bin', 'tsx'), ['scripts/cli.ts', 'api-keys', 'create', '--org', 'chaos', '--name', 'chaos', '--permission', 'admin'], { cwd: root, env });
        if ((await keyCli.exited).code !== 0) throw new Error(`key creation failed:\n${keyCli.lines.join('\n')}`);
        return keyCli.lines.filter((l) => l.trim() !== '').at(-1)!;
      },
      messages: Number(process.env.CHAOS_MESSAGES ?? 300),
      rate: RATE,
      fires: Number(process.env.CHAOS_FIRES ?? 60),
      ticks: Number(process.env.CHAOS_TICKS ?? 10),
      rateLimit: Number(process.env.CHAOS_RATE_LIMIT ?? 50),
      drainTimeoutMs: 300_000,
      log,
    });
    log(`figures: ${JSON.stringify(report.figures)}`);
    failed = report.checks.some((c) => !c.ok);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  log(failed ? 'FAILED' : 'all checks passed');
  process.exit(failed ? 1 : 0);
}

const replicasArg = process.argv.indexOf('--replicas');
const replicas = replicasArg >= 0 ? Number(process.argv[replicasArg + 1]) : 1;
if (replicas !== 1 && replicas !== 2) {
  process.stderr.write('--replicas takes 1 (the outage drill) or 2 (the replicated drill)\n');
  process.exit(2);
}

(replicas === 2 ? replicatedMain() : main()).catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
