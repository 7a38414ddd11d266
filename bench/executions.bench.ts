/**
 * `npm run bench -- executions [--n 200] [--concurrency 20] [--rounds 3] [--warmup 300] [--cpu-prof FILE]`:
 * N inbound messages through `POST /v1/messages`, each starting a two-node message
 * workflow, run to `success`. Baseline in the same run: N bare Temporal workflows of two
 * no-op activities each, started with the client on the same server, with a worker built
 * with the same settings. `rounds` interleaved rounds (ours, bare, ours, bare, ...), after
 * `warmup` uncounted executions of each side. 300, not fewer: after 40 the API process was
 * still warming up (its first round's POST p50 31–39 ms, the later rounds' 15–22 ms), so
 * the rounds drifted instead of repeating (docs/performance.md, "Night of 2026-11-26").
 *
 * Both sides run with the same bounded concurrency: `concurrency` slots, each keeps ONE
 * execution in flight (ours: send the message, wait until its run has closed, which is
 * after the execution's completion committed in PostgreSQL; bare: `execute`, which waits
 * for the result). So the latency percentiles are per execution, not the time a message
 * spent queued behind all the others (accepting messages is much faster than running
 * them). Throughput = completed executions per second.
 *
 * Prints per round, then the median and range over the rounds of: executions/s, the
 * `POST /v1/messages` answer time p50/p99 (targets ≤ 20 ms / ≤ 100 ms; sent and timed by a
 * client process of its own, bench/support/timed-post.ts, not on this busy event loop), message→success
 * p50/p99; and where a POST's time goes while ours runs: the Temporal start (after the
 * answer), what the database backends were doing (pg_stat_activity sampled every 50 ms:
 * lock waits, commit flushes, idle in transaction = waiting on this process), connection
 * pool waits and this thread's event-loop delay. `--cpu-prof FILE` CPU-profiles this
 * thread during the first round of ours. Last line: `ratio=<median ours/median bare>`.
 *
 * `--topology split` (default) runs ours as deployed (docker-compose.yml, `npm start`): the
 * API in a process of its own (`src/main.ts api`), the worker in this one; the bare side is
 * one process too (its client is a library call, not a service). `--topology single` runs
 * the API, our worker and the load in this one process, as the tests do; only there can
 * the bench time the Temporal starts and sample the API's ORM pool. To profile the API
 * process: `BENCH_API_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/api"` (node flags for it).
 */
import { generateSecretsKey } from '../src/secrets';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { bundleWorkflowCode, DefaultLogger, Runtime } from '@temporalio/worker';
import { Client } from 'pg';
import { type Client as TemporalClient, WorkflowNotFoundError } from '@temporalio/client';
import { createApiServices, createApp } from '../src/app';
import { TimedPoster } from './support/timed-post';
import { loadConfig } from '../src/config';
import { createOrm, migrate, type Orm } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { closeServices, createServices } from '../src/services';
import { createActivities } from '../temporal/activities';
import { executionWorkflowId } from '../temporal/executions.shared';
import { createWorker, runWorker } from '../temporal/worker';
import { freePort, spawnProcess, type SpawnedProcess } from '../test/helpers/process';
import {
  benchDatabase,
  benchTemporal,
  cpuProfile,
  formatStats,
  log,
  machineLine,
  optionArg,
  percentile as pct,
  pool,
  positiveIntArg as arg,
  processCpuMs,
  roundStats,
  temporalServerPid,
  threadCpuMs,
  threadCpuMsSince,
} from './lib';

const STEPS = 2;
/**
 * How often the database backends are sampled while ours runs. The sample is a query on
 * the same 2 cores: at every 10 ms it took ~10 % of a core from ours alone (2.8 ms a query
 * under load, by pg_stat_statements); every 50 ms still gives ~160 samples a round.
 */
const SAMPLE_MS = 50;

/**
 * Resolves when the API's background start of a workflow id has returned. The bench hooks
 * the client's `start` instead of polling `describe` (20 slots polling every few ms were a
 * load of their own on the Temporal server and this event loop).
 */
function startWaiter() {
  const waiting = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  const entry = (workflowId: string) => {
    let e = waiting.get(workflowId);
    if (!e) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      e = { promise, resolve };
      waiting.set(workflowId, e);
    }
    return e;
  };
  return {
    started(workflowId: string) {
      entry(workflowId).resolve();
    },
    async until(workflowId: string) {
      await entry(workflowId).promise;
      waiting.delete(workflowId);
    },
  };
}

/** Waits for the API process to answer /healthz (it migrates and connects first). */
async function untilHealthy(base: string, p: SpawnedProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the API process did not become healthy:\n${p.lines.join('\n')}`);
}

/**
 * Waits for the run to close; true when it completed. A run the API has not started yet
 * is not found: asked again 10 ms later (the API starts it right after answering).
 */
async function untilClosed(client: TemporalClient, workflowId: string): Promise<boolean> {
  for (;;) {
    try {
      await client.workflow.getHandle(workflowId).result();
      return true;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

/**
 * CPU spent by each part of the system while `during` runs, in ms per execution: where an
 * execution's cost lies (on a shared 2-core machine this moves far less than throughput).
 * PostgreSQL counts the benchmark database's backends (those alive at the end).
 */
async function cpuPerExecution(
  parts: { api?: number; temporal?: number; databaseUrl: string },
  n: number,
  during: () => Promise<void>,
): Promise<string> {
  const client = new Client({ connectionString: parts.databaseUrl });
  client.on('error', () => undefined);
  await client.connect();
  const backendPids = async () =>
    (await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.map((r) => r.pid);
  const pg = async () => Object.fromEntries((await backendPids()).map((pid) => [pid, processCpuMs(pid)]));
  const snapshot = async () => ({
    self: processCpuMs('self'),
    api: parts.api ? processCpuMs(parts.api) : 0,
    temporal: parts.temporal ? processCpuMs(parts.temporal) : 0,
    pg: await pg(),
  });
  const measured = async () => {
    const threadsBefore = threadCpuMs();
    const before = await snapshot();
    await during();
    return { before, after: await snapshot(), threads: threadCpuMsSince(threadsBefore) };
  };
  const { before, after, threads } = await measured().finally(() => client.end());
  const pgMs = Object.entries(after.pg).reduce((a, [pid, v]) => a + v - (before.pg[pid] ?? 0), 0);
  const each = (v: number) => (v / n).toFixed(1);
  const items = [
    ...(parts.api ? [`API process ${each(after.api - before.api)}`] : []),
    `bench process (worker${parts.api ? '' : ', API'} and load) ${each(after.self - before.self)}`,
    `PostgreSQL ${each(pgMs)}`,
    ...(parts.temporal ? [`Temporal server ${each(after.temporal - before.temporal)}`] : []),
  ];
  const busyThreads = [...threads]
    .filter(([, v]) => v / n >= 0.5)
    .sort((a, b) => b[1] - a[1])
    .map(([name, v]) => `${name} ${each(v)}`);
  items[parts.api ? 1 : 0] += ` (threads: ${busyThreads.join(', ')})`;
  const total = after.self - before.self + (after.api - before.api) + pgMs + (after.temporal - before.temporal);
  return `    CPU ms per execution: ${items.join(', ')}; total ${each(total)}`;
}

/**
 * Samples what the benchmark database's client backends are doing every SAMPLE_MS: the share
 * of backend-samples per state and wait event, and which statements wait on locks.
 */
function sampleBackends(databaseUrl: string) {
  const client = new Client({ connectionString: databaseUrl });
  // Dropping the database at the end terminates this connection: not an error of the run.
  client.on('error', () => undefined);
  const states = new Map<string, number>();
  const lockWaiters = new Map<string, number>();
  // Idle in transaction: the backend waits for the client's next statement; by the last one it ran.
  const idleAfter = new Map<string, number>();
  const count = (m: Map<string, number>, key: string) => m.set(key, (m.get(key) ?? 0) + 1);
  let samples = 0;
  let running = true;
  const done = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ state: string; wait: string; query: string }>(
        `select coalesce(state, '?') as state, coalesce(wait_event_type || ':' || wait_event, '') as wait, left(query, 200) as query
           from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`,
      );
      samples++;
      const statement = (q: string) => q.replace(/\s+/g, ' ').slice(0, 70);
      for (const r of rows) {
        const key = r.state === 'active' ? `active ${r.wait || '(on CPU)'}` : r.state === 'idle' ? 'idle' : `${r.state} ${r.wait}`.trim();
        count(states, key);
        if (r.wait.startsWith('Lock:')) count(lockWaiters, `${r.wait} ${statement(r.query)}`);
        if (r.state === 'idle in transaction') count(idleAfter, statement(r.query));
      }
      await new Promise((r) => setTimeout(r, SAMPLE_MS));
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await done;
      const busy = [...states].filter(([k]) => k !== 'idle');
      const total = busy.reduce((a, [, v]) => a + v, 0);
      // The `limit` most frequent entries, each as its share of the busy backend-samples.
      const top = (entries: Array<[string, number]>, limit: number, more: (v: number) => string = () => '') =>
        entries
          .sort((a, b) => b[1] - a[1])
          .slice(0, limit)
          .map(([k, v]) => `      ${((100 * v) / Math.max(1, total)).toFixed(0).padStart(3)} %  ${k}${more(v)}`);
      const lines = top(busy, 8, (v) => `  (mean ${(v / Math.max(1, samples)).toFixed(1)} backends)`);
      const locks = top([...lockWaiters], 5);
      const idle = top([...idleAfter], 5);
      return [
        `    database backends not idle, ${samples} samples:`,
        ...lines,
        ...(locks.length ? ['    lock waits by statement:', ...locks] : []),
        ...(idle.length ? ['    idle in transaction, by the statement before:', ...idle] : []),
      ];
    },
  };
}

/** Samples the ORM pool (knex/tarn) every 10 ms: requests waiting for a connection. */
function samplePool(orm: Orm) {
  const tarn = (orm.em.getConnection().getKnex() as unknown as { client: { pool: { numPendingAcquires(): number; numUsed(): number } } }).client.pool;
  const waiting: number[] = [];
  const used: number[] = [];
  const timer = setInterval(() => {
    waiting.push(tarn.numPendingAcquires());
    used.push(tarn.numUsed());
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
      return `    ORM pool: mean ${mean(used).toFixed(1)} connections in use, mean ${mean(waiting).toFixed(1)} requests waiting (max ${Math.max(0, ...waiting)})`;
    },
  };
}

interface OursRound {
  rate: number;
  e2e: number[];
  accept: number[];
  temporalStart: number[];
  failed: number;
  loopDelayP99: number;
  diagnostics: string[];
}

export async function run(args: string[]): Promise<void> {
  // Worker state changes would otherwise print after the ratio line.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const n = arg(args, 'n', 200);
  const concurrency = arg(args, 'concurrency', 20);
  const rounds = arg(args, 'rounds', 3);
  const warmup = arg(args, 'warmup', 300);
  const profileFile = optionArg(args, 'cpu-prof');
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const suffix = randomBytes(4).toString('hex');
  const split = (optionArg(args, 'topology') ?? 'split') !== 'single';
  const env = {
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '20',
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-executions-${suffix}`,
    SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY ?? generateSecretsKey(),
    REDIS_KEY_PREFIX: `wfa-bench:${suffix}:`,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CREDENTIAL_PER_HOUR: '1000000',
    RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '1000000',
    RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '1000000',
  };
  const config = loadConfig({ ...process.env, ...env });
  const orm = await createOrm(entities, db.url, 20);
  await migrate(orm);
  const services = await createServices(config, { orm });
  let server: Server | undefined;
  let apiProcess: SpawnedProcess | undefined;
  let base: string;
  if (split) {
    const port = await freePort();
    apiProcess = spawnProcess(process.execPath, [...(process.env.BENCH_API_NODE_OPTIONS?.split(' ') ?? []), '--require', 'tsx/cjs', 'src/main.ts', 'api'], {
      cwd: path.resolve(__dirname, '..'),
      env: { ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    });
    base = `http://127.0.0.1:${port}`;
    await untilHealthy(base, apiProcess);
  } else {
    const { app } = createApp(await createApiServices(services));
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((r) => server!.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  const ours = runWorker(await createWorker({ address: temporal.address, namespace: 'default', taskQueue: config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services }) }));
  const bareQueue = `bench-bare-${suffix}`;
  const bare = runWorker(
    await createWorker({
      address: temporal.address,
      namespace: 'default',
      taskQueue: bareQueue,
      activities: { async noop() {} },
      workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./support/bare.workflow') }),
    }),
  );

  // Times the Temporal starts the API runs after answering (the bare side calls `execute`, not timed).
  const temporalStart: number[] = [];
  const workflowClient = services.temporal.client.workflow;
  const start = workflowClient.start.bind(workflowClient);
  const starts = startWaiter();
  // The POSTs of ours are sent and timed on a thread of their own (see timed-post.ts).
  const poster = new TimedPoster();
  workflowClient.start = (async (...a: Parameters<typeof start>) => {
    const t = performance.now();
    try {
      return await start(...a);
    } finally {
      temporalStart.push(performance.now() - t);
      starts.started(a[1].workflowId);
    }
  }) as typeof start;

  try {
    const org = await new ApiKeyService(orm.em.fork()).ensureOrganization(`bench-${suffix}`);
    const { key } = await new ApiKeyService(orm.em.fork()).create(org.id, 'bench', 'admin');
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const post = async (path: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers, ...(body ? { body: JSON.stringify(body) } : {}) });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { data: Record<string, any> };
    };
    const wf = await post('/v1/workflows', {
      name: 'Bench',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['bench'] },
        nodes: [
          { id: 'hello', type: 'message', content: 'Hello!', next: 'bye' },
          { id: 'bye', type: 'message', content: 'Bye!' },
        ],
      },
    });
    await post(`/v1/workflows/${wf.data.id}/activate`);
    log(machineLine());
    const temporalPid = temporalServerPid(temporal.address);
    log(`executions benchmark: n=${n} concurrency=${concurrency} steps=${STEPS} rounds=${rounds} topology=${split ? 'split (API process + worker process)' : 'single process'} temporal=${temporal.address}`);

    /**
     * One of ours: message in → execution closed (its completion committed in PostgreSQL
     * first). Returns when the API answered (ms after `sent`) and whether the run completed.
     */
    const oneOurs = async (customer: string): Promise<{ acceptedMs: number; completed: boolean }> => {
      const answer = await poster.post(`${base}/v1/messages`, headers, { channel: 'whatsapp', customer_id: customer, message: 'bench please' });
      if (answer.status !== 201) throw new Error(`/v1/messages: ${answer.status} ${answer.text}`);
      const id = JSON.parse(answer.text).data.executions[0].id as string;
      const acceptedMs = answer.ms;
      // The API answers at commit and starts the run right after: wait for that start.
      if (!split) await starts.until(executionWorkflowId(id));
      return { acceptedMs, completed: await untilClosed(services.temporal.client, executionWorkflowId(id)) };
    };
    /** One bare Temporal workflow of STEPS no-op activities, to its result. */
    const oneBare = (workflowId: string) =>
      services.temporal.client.workflow.execute('bareStepsWorkflow', {
        taskQueue: bareQueue,
        workflowId,
        args: [STEPS],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
      });

    const runOurs = async (round: number): Promise<OursRound> => {
      const e2e: number[] = [];
      const accept: number[] = [];
      let runFailures = 0;
      temporalStart.length = 0;
      const backends = sampleBackends(db.url);
      const poolWaits = split ? undefined : samplePool(orm);
      // Node's default resolution: a 1 ms timer would be a load of its own on our worker's thread.
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const t0 = Date.now();
      let diagnostics: string[] = [];
      let cpuLine = '';
      try {
        cpuLine = await cpuPerExecution({ ...(apiProcess?.child.pid ? { api: apiProcess.child.pid } : {}), ...(temporalPid ? { temporal: temporalPid } : {}), databaseUrl: db.url }, n, () =>
          cpuProfile(round === 0 ? profileFile : undefined, () =>
          pool(n, concurrency, async (i) => {
            const sent = performance.now();
            const { acceptedMs, completed } = await oneOurs(`bench-${round}-${i}`);
            accept.push(acceptedMs);
            if (!completed) runFailures++;
            e2e.push(performance.now() - sent);
          }),
        ));
      } finally {
        delay.disable();
        diagnostics = [cpuLine, ...(await backends.stop()), ...(poolWaits ? [poolWaits.stop()] : [])];
      }
      const seconds = (Date.now() - t0) / 1000;
      const [row] = await orm.em.fork().getConnection().execute<Array<{ running: number; failed: number }>>(
        `select count(*) filter (where status = 'running')::int as running, count(*) filter (where status not in ('running', 'success'))::int as failed
           from executions where workflow_id = ?`,
        [wf.data.id],
      );
      if ((row?.running ?? 0) > 0) throw new Error(`${row!.running} executions still running after their runs closed`);
      return { rate: n / seconds, e2e, accept, temporalStart: [...temporalStart], failed: Math.max(row?.failed ?? 0, runFailures), loopDelayP99: delay.percentile(99) / 1e6, diagnostics };
    };

    // Bare Temporal: the same number of workflows, STEPS no-op activities each.
    const runBare = async (round: number) => {
      const lat: number[] = [];
      const t1 = Date.now();
      const cpuLine = await cpuPerExecution({ ...(temporalPid ? { temporal: temporalPid } : {}), databaseUrl: db.url }, n, () => pool(n, concurrency, async (i) => {
        const started = performance.now();
        await oneBare(`bench-bare-${suffix}-${round}-${i}`);
        lat.push(performance.now() - started);
      }));
      return { rate: n / ((Date.now() - t1) / 1000), lat, cpuLine };
    };

    // Not counted: the API process starts just before round 1, and its first messages pay
    // for JIT compilation and opening pool connections (round 1 of ours used to run at
    // half the later rounds' rate); bare warms up the same way for symmetry.
    await pool(warmup, concurrency, async (i) => void (await oneOurs(`bench-warmup-${i}`)));
    await pool(warmup, concurrency, async (i) => void (await oneBare(`bench-bare-${suffix}-warmup-${i}`)));
    log(`warm-up: ${warmup} executions of each side, not counted`);

    const oursRounds: OursRound[] = [];
    const bareRounds: Array<{ rate: number; lat: number[]; cpuLine: string }> = [];
    const ms = (v: number) => v.toFixed(0);
    for (let round = 0; round < rounds; round++) {
      const o = await runOurs(round);
      oursRounds.push(o);
      log(`round ${round + 1} ours: ${o.rate.toFixed(1)} executions/s  POST /v1/messages p50 ${ms(pct(o.accept, 50))} ms p99 ${ms(pct(o.accept, 99))} ms  message→success p50 ${ms(pct(o.e2e, 50))} ms p99 ${ms(pct(o.e2e, 99))} ms  failed ${o.failed}`);
      log(`    ${split ? '' : `Temporal start (after the answer): p50 ${ms(pct(o.temporalStart, 50))} ms p99 ${ms(pct(o.temporalStart, 99))} ms; `}event-loop delay p99 (this process) ${o.loopDelayP99.toFixed(1)} ms`);
      for (const line of o.diagnostics) log(line);
      const b = await runBare(round);
      bareRounds.push(b);
      log(`round ${round + 1} bare: ${b.rate.toFixed(1)} workflows/s  p50 ${ms(pct(b.lat, 50))} ms p99 ${ms(pct(b.lat, 99))} ms`);
      log(b.cpuLine);
    }
    log(machineLine());
    const over = <T>(xs: T[], f: (x: T) => number) => roundStats(xs.map(f));
    const oursRate = over(oursRounds, (o) => o.rate);
    const bareRate = over(bareRounds, (b) => b.rate);
    log(`ours (POST /v1/messages → execution success, ${concurrency} in flight), ${rounds} rounds of ${n}:`);
    log(`    executions/s            ${formatStats(oursRate, '/s', 1)}`);
    log(`    POST /v1/messages p50   ${formatStats(over(oursRounds, (o) => pct(o.accept, 50)), 'ms')}   (target ≤ 20 ms)`);
    log(`    POST /v1/messages p99   ${formatStats(over(oursRounds, (o) => pct(o.accept, 99)), 'ms')}   (target ≤ 100 ms)`);
    if (!split) log(`    Temporal start p50      ${formatStats(over(oursRounds, (o) => pct(o.temporalStart, 50)), 'ms')}`);
    log(`    message→success p50     ${formatStats(over(oursRounds, (o) => pct(o.e2e, 50)), 'ms')}`);
    log(`    message→success p99     ${formatStats(over(oursRounds, (o) => pct(o.e2e, 99)), 'ms')}`);
    log(`    failed                  ${oursRounds.reduce((a, o) => a + o.failed, 0)}`);
    log(`bare Temporal (${STEPS} no-op activities, ${concurrency} in flight):`);
    log(`    workflows/s             ${formatStats(bareRate, '/s', 1)}`);
    log(`    p50                     ${formatStats(over(bareRounds, (b) => pct(b.lat, 50)), 'ms')}`);
    log(`    p99                     ${formatStats(over(bareRounds, (b) => pct(b.lat, 99)), 'ms')}`);
    log(`ratio=${(oursRate.median / bareRate.median).toFixed(2)}`);
  } finally {
    await poster.close();
    await Promise.all([ours.shutdown(), bare.shutdown()]);
    if (server) await new Promise<void>((r) => server!.close(() => r()));
    await apiProcess?.kill('SIGTERM');
    await closeServices(services);
    await db.drop();
    await temporal.stop();
  }
}
