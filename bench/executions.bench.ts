/**
 * `npm run bench -- executions [--n 200] [--concurrency 20]`: N inbound messages through
 * `POST /v1/messages`, each starting a two-node message workflow, run to `success`.
 * Baseline in the same run: N bare Temporal workflows of two no-op activities each,
 * started with the client on the same server, with a worker built with the same settings.
 *
 * Both sides run with the same bounded concurrency: `concurrency` slots, each keeps ONE
 * execution in flight (ours: send the message, wait until its run has closed, which is
 * after the execution's completion committed in PostgreSQL; bare: `execute`, which waits
 * for the result). So the latency percentiles are per execution, not the time a message
 * spent queued behind all the others (accepting messages is much faster than running
 * them). Throughput = completed executions per second; prints `ratio=<ours/bare>` last.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { bundleWorkflowCode, DefaultLogger, Runtime } from '@temporalio/worker';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { closeServices, createServices } from '../src/services';
import { createActivities } from '../temporal/activities';
import { createWorker, runWorker } from '../temporal/worker';
import { benchDatabase, benchTemporal, log } from './lib';

const STEPS = 2;

function arg(args: string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : fallback;
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer`);
  return v;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` in flight. */
async function pool(n: number, concurrency: number, fn: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

export async function run(args: string[]): Promise<void> {
  // Worker state changes would otherwise print after the ratio line.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const n = arg(args, 'n', 200);
  const concurrency = arg(args, 'concurrency', 20);
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const suffix = randomBytes(4).toString('hex');
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '20',
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-executions-${suffix}`,
    REDIS_KEY_PREFIX: `wfa-bench:${suffix}:`,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_CREDENTIAL_PER_HOUR: '1000000',
    RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '1000000',
    RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '1000000',
  });
  const orm = await createOrm(db.url, 20);
  await migrate(orm);
  const services = await createServices(config, { orm });
  const { app } = createApp(services);
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
    log(`executions benchmark: n=${n} concurrency=${concurrency} steps=${STEPS} temporal=${temporal.address}`);

    // Ours: message in → execution closed (its completion committed in PostgreSQL first).
    const oursLat: number[] = [];
    const acceptLat: number[] = [];
    let runFailures = 0;
    const t0 = Date.now();
    await pool(n, concurrency, async (i) => {
      const sent = Date.now();
      const res = await post('/v1/messages', { channel: 'whatsapp', customer_id: `bench-${i}`, message: 'bench please' });
      const id = res.data.executions[0].id as string;
      acceptLat.push(Date.now() - sent);
      await services.temporal.client.workflow.getHandle(id).result().catch(() => runFailures++);
      oursLat.push(Date.now() - sent);
    });
    const oursSeconds = (Date.now() - t0) / 1000;
    const [row] = await orm.em.fork().getConnection().execute<Array<{ running: number; failed: number; p50: number; p99: number }>>(
      `select count(*) filter (where status = 'running')::int as running, count(*) filter (where status not in ('running', 'success'))::int as failed,
              percentile_disc(0.5) within group (order by duration_ms) as p50, percentile_disc(0.99) within group (order by duration_ms) as p99
         from executions where workflow_id = ?`,
      [wf.data.id],
    );
    if ((row?.running ?? 0) > 0) throw new Error(`${row!.running} executions still running after their runs closed`);
    const failed = Math.max(row?.failed ?? 0, runFailures);
    oursLat.sort((a, b) => a - b);
    acceptLat.sort((a, b) => a - b);
    const oursRate = n / oursSeconds;

    // Bare Temporal: the same number of workflows, STEPS no-op activities each.
    const bareLat: number[] = [];
    const t1 = Date.now();
    await pool(n, concurrency, async (i) => {
      const started = Date.now();
      await services.temporal.client.workflow.execute('bareStepsWorkflow', {
        taskQueue: bareQueue,
        workflowId: `bench-bare-${suffix}-${i}`,
        args: [STEPS],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
      });
      bareLat.push(Date.now() - started);
    });
    const bareSeconds = (Date.now() - t1) / 1000;
    const bareRate = n / bareSeconds;
    bareLat.sort((a, b) => a - b);

    log(`ours (POST /v1/messages → execution success, ${concurrency} in flight): ${oursRate.toFixed(1)} executions/s  p50 ${pct(oursLat, 50)} ms  p99 ${pct(oursLat, 99)} ms  failed ${failed}`);
    log(`bare Temporal (${STEPS} no-op activities, ${concurrency} in flight):      ${bareRate.toFixed(1)} workflows/s   p50 ${pct(bareLat, 50)} ms  p99 ${pct(bareLat, 99)} ms`);
    // Where our time goes: the POST until the answer, and the execution row's own started_at → completed_at.
    log(`  ours breakdown: message accepted p50 ${pct(acceptLat, 50)} ms p99 ${pct(acceptLat, 99)} ms; execution duration_ms p50 ${row?.p50 ?? 0} ms p99 ${row?.p99 ?? 0} ms`);
    log(`ratio=${(oursRate / bareRate).toFixed(2)}`);
  } finally {
    await Promise.all([ours.shutdown(), bare.shutdown()]);
    await new Promise<void>((r) => server.close(() => r()));
    await closeServices(services);
    await db.drop();
    await temporal.stop();
  }
}
