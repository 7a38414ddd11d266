/**
 * `npm run bench -- webhooks [--events N]`: N outbox events delivered to a local HTTPS
 * receiver that answers 200 (outbox insert → dispatcher → Temporal workflow → signed POST
 * → log row), measuring deliveries per second and p99 from event insert to receipt. In the
 * same run, on the same server and worker settings, the baseline: N bare Temporal
 * workflows with one no-op activity, started as fast as the dispatcher starts ours.
 * Prints both, then `ratio=<ours/bare>` (deliveries per second) last.
 */
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { recordEvent } from '../src/modules/events/outbox';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { EventDispatcher } from '../src/modules/webhooks/event-dispatcher';
import { closeServices, createServices } from '../src/services';
import { createActivities } from '../temporal/activities';
import { createWorker, runWorker } from '../temporal/worker';
import { connectivityCheckWorkflow } from '../temporal/workflows';
import { startHttpsReceiver } from '../test/helpers/https-receiver';
import { benchDatabase, benchTemporal, log, parseBenchArgs } from './lib';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

export async function run(args: string[]): Promise<void> {
  const n = parseBenchArgs(args, { events: 300 }).events ?? 300;
  const receiver = await startHttpsReceiver(() => ({ status: 200, body: 'ok' }));
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-webhooks-${randomBytes(4).toString('hex')}`,
    REDIS_KEY_PREFIX: `wfa-bench:${randomBytes(4).toString('hex')}:`,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_EXTRA_CA_FILE: receiver.caFile,
    LOG_LEVEL: 'silent',
  });
  const orm = await createOrm(config.DATABASE_URL, config.DATABASE_POOL_MAX);
  await migrate(orm);
  const services = await createServices(config, { orm });
  const worker = runWorker(
    await createWorker({
      address: config.TEMPORAL_ADDRESS_EFFECTIVE,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      activities: createActivities({ services }),
    }),
  );
  const dispatcher = new EventDispatcher(services);
  try {
    const orgId = (await new ApiKeyService(orm.em.fork() as EntityManager).ensureOrganization(`bench-${randomBytes(3).toString('hex')}`)).id;
    await orm.em.getConnection().execute(
      `insert into webhooks (id, organization_id, name, url, events, secret, active, max_retries, retry_delay_ms)
       values (?, ?, 'bench', ?, '{workflow.completed}', 'bench-secret-0123456789', true, 3, 1000)`,
      [`wh_bench${randomBytes(6).toString('hex')}`, orgId, receiver.url('/bench')],
    );
    // Warm-up: one delivery and one bare workflow, so neither side pays first-use costs.
    dispatcher.start();
    const emit = async (count: number) => {
      const em = orm.em.fork() as EntityManager;
      const inserted = new Map<string, number>();
      for (let i = 0; i < count; i++) {
        const e = recordEvent(em, { organizationId: orgId, type: 'workflow.completed', data: { workflow_id: 'wf_bench', execution_id: `exec_${i}`, status: 'success', duration_ms: 1, customer_id: null, channel: 'whatsapp' } });
        inserted.set(e.id, 0);
      }
      const t0 = Date.now();
      await em.flush();
      for (const id of inserted.keys()) inserted.set(id, t0);
      return inserted;
    };
    await emit(1);
    await receiver.waitFor('/bench', 1, 60_000);
    await services.temporal.client.workflow.execute(connectivityCheckWorkflow, { taskQueue: config.TEMPORAL_TASK_QUEUE, workflowId: `bench-bare-warm-${randomBytes(4).toString('hex')}` });

    // Ours: N events committed at once; each is delivered by its own workflow.
    const already = receiver.requestsTo('/bench').length;
    const inserted = await emit(n);
    const start = Math.min(...inserted.values());
    const reqs = (await receiver.waitFor('/bench', already + n, 600_000)).slice(already);
    const latencies = reqs.map((r) => r.at - (inserted.get(r.headers['x-service-event-id'] ?? '') ?? start)).sort((a, b) => a - b);
    const oursSeconds = (Math.max(...reqs.map((r) => r.at)) - start) / 1000;
    const oursRate = n / oursSeconds;
    log(`webhooks: ${n} deliveries in ${oursSeconds.toFixed(2)} s = ${oursRate.toFixed(1)} deliveries/s; event→receipt p50=${percentile(latencies, 50)} ms p99=${percentile(latencies, 99)} ms`);

    // Bare Temporal: N workflows with one no-op activity, started with the dispatcher's concurrency.
    const bareLatencies: number[] = [];
    const bareStart = Date.now();
    let bareEnd = bareStart;
    const tag = randomBytes(4).toString('hex');
    await mapLimit(Array.from({ length: n }, (_, i) => i), 32, async (i) => {
      const t0 = Date.now();
      const handle = await services.temporal.client.workflow.start(connectivityCheckWorkflow, { taskQueue: config.TEMPORAL_TASK_QUEUE, workflowId: `bench-bare-${tag}-${i}` });
      void handle.result().then(() => {
        const t1 = Date.now();
        bareLatencies.push(t1 - t0);
        bareEnd = Math.max(bareEnd, t1);
      });
    });
    while (bareLatencies.length < n) await new Promise((r) => setTimeout(r, 20));
    bareLatencies.sort((a, b) => a - b);
    const bareSeconds = (bareEnd - bareStart) / 1000;
    const bareRate = n / bareSeconds;
    log(`bare temporal: ${n} workflows in ${bareSeconds.toFixed(2)} s = ${bareRate.toFixed(1)} workflows/s; start→done p50=${percentile(bareLatencies, 50)} ms p99=${percentile(bareLatencies, 99)} ms`);
    log(`ratio=${(oursRate / bareRate).toFixed(2)}`);
  } finally {
    await dispatcher.stop();
    await worker.shutdown();
    await closeServices(services);
    await db.drop().catch(() => undefined);
    await temporal.stop();
    await receiver.close();
  }
}
