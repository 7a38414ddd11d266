/**
 * `npm run bench -- webhooks [--events 300] [--rounds 5] [--cpu-prof PREFIX]`: interleaved rounds of
 *
 * - **ours**: N outbox events committed at once (one transaction, as a burst of executions
 *   finishing would) and delivered to a local HTTPS receiver that answers 200: the event
 *   dispatcher (LISTEN/NOTIFY) → one delivery workflow per event → the attempt activity
 *   (webhook and event read, signed POST, log row);
 * - **bare**: the bare-Temporal equivalent of one delivery: one workflow with one no-op
 *   activity per event, on its own task queue and worker (same server, same worker
 *   settings), started by the client with the dispatcher's start concurrency
 *   (`DISPATCH_START_CONCURRENCY`) from the moment the burst exists, as the dispatcher starts
 *   ours.
 *
 * Both sides are timed at the same point of the one activity: ours when the receiver has
 * the request (event→receipt), bare when the no-op activity runs (start→done), both from
 * the moment the burst was handed over (ours: before the events' commit; bare: before the
 * first start). Throughput = N / (last receipt or activity − that moment). Nothing waits
 * on workflow results while a round is timed (that would add N long polls to one side);
 * after each round, every workflow of it is awaited, and ours also checks that every
 * delivery wrote its log row and every event was stamped dispatched, so no round leaks
 * work into the next. The order alternates (ours first in odd rounds, bare first in even).
 *
 * Prints per round (with the load average), then the median and range over the rounds,
 * where ours spends the time (event→start call, the start itself, start→activity, activity
 * →receipt, receipt→activity end) and this process's CPU per delivery, then the machine line
 * and `ratio=<median ours / median bare>` (deliveries/s over workflows/s) last. Each round
 * also prints this process's CPU per event by thread (main = activities, dispatcher,
 * receiver; the SDK's workflow thread; the Rust core's threads). `--cpu-prof PREFIX` writes
 * `PREFIX.ours.cpuprofile` / `PREFIX.bare.cpuprofile` of the main thread in round 1
 * (bench/support/cpuprofile-summary.ts reads them).
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Context } from '@temporalio/activity';
import { bundleWorkflowCode, DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { generateSecretsKey, sealSecret, sealedAt } from '../src/secrets';
import { entities } from '../src/entities';
import { recordEvent } from '../src/modules/events/outbox';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { DISPATCH_START_CONCURRENCY, EventDispatcher } from '../src/modules/webhooks/event-dispatcher';
import { closeServices, createServices } from '../src/services';
import { createActivities } from '../temporal/activities';
import { createWorker, runWorker } from '../temporal/worker';
import { deliveryWorkflowId, type WebhookDeliveryInput } from '../temporal/webhooks.shared';
import { startHttpsReceiver } from '../test/helpers/https-receiver';
import {
  benchDatabase,
  benchTemporal,
  cpuProfile,
  formatStats,
  log,
  machineBusyMs,
  machineLine,
  optionArg,
  percentile as pct,
  pool,
  positiveIntArg as arg,
  roundStats,
  type RoundStats,
  threadCpuMs,
  threadCpuMsSince,
} from './lib';

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Samples this process's RSS every 50 ms until stopped; returns the peak in MiB. */
function sampleRss(): () => number {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 50);
  return () => {
    clearInterval(timer);
    return Math.max(peak, process.memoryUsage.rss()) / 2 ** 20;
  };
}

/**
 * This process's CPU per event while `during` runs: in all (process.cpuUsage), per thread
 * name (above 0.05 ms), the machine's busy CPU, and the peak RSS.
 */
async function perEvent<T>(events: number, during: () => Promise<T>) {
  const threads0 = threadCpuMs();
  const cpu0 = process.cpuUsage();
  const busy0 = machineBusyMs();
  const rss = sampleRss();
  const result = await during();
  const cpu = process.cpuUsage(cpu0);
  const threads: Record<string, number> = {};
  for (const [name, ms] of threadCpuMsSince(threads0)) if (ms / events >= 0.05) threads[name] = ms / events;
  const busy = machineBusyMs() - busy0;
  return { result, cost: { cpuMs: (cpu.user + cpu.system) / 1000 / events, machineCpuMs: busy / events, threads, rssMiB: rss() } };
}

const load1 = () => os.loadavg()[0]!.toFixed(2);

interface Round {
  rate: number;
  p50: number;
  p99: number;
  /** CPU of this process (worker, dispatcher, receiver, bench) per delivery, ms. */
  cpuMs: number;
  /** Busy CPU of the whole machine per delivery, ms (includes other sessions' work). */
  machineCpuMs: number;
  phases?: Record<string, number[]>;
  /** CPU ms per event of this process's threads, by thread name. */
  threads: Record<string, number>;
  /** Peak resident set size of this process during the round, MiB (sampled every 50 ms). */
  rssMiB: number;
  load: string;
}

export async function run(args: string[]): Promise<void> {
  // Worker state changes would otherwise print among the figures.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const n = arg(args, 'events', 300);
  const rounds = arg(args, 'rounds', 5);
  const profileFile = optionArg(args, 'cpu-prof');
  const receiver = await startHttpsReceiver(() => ({ status: 200, body: 'ok' }));
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const suffix = randomBytes(4).toString('hex');
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-webhooks-${suffix}`,
    REDIS_KEY_PREFIX: `wfa-bench:${suffix}:`,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_EXTRA_CA_FILE: receiver.caFile,
    LOG_LEVEL: 'silent',
    // Webhook secrets are stored sealed: the bench's row is sealed under its own key.
    SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY ?? generateSecretsKey(),
  });
  const orm = await createOrm(entities, config.DATABASE_URL, config.DATABASE_POOL_MAX);
  await migrate(orm);
  const services = await createServices(config, { orm });

  // Where ours spends its time: the dispatcher's starts and the activity, timed per event.
  const startCalled = new Map<string, number>();
  const startReturned = new Map<string, number>();
  const workflowClient = services.temporal.client.workflow;
  const start = workflowClient.start.bind(workflowClient);
  workflowClient.start = (async (...a: Parameters<typeof start>) => {
    const id = a[1]!.workflowId;
    startCalled.set(id, Date.now());
    try {
      return await start(...a);
    } finally {
      startReturned.set(id, Date.now());
    }
  }) as typeof start;
  const activityBegan = new Map<string, number>();
  const activityEnded = new Map<string, number>();
  const activities = createActivities({ services });
  const deliver = activities.deliverWebhookAttempt;
  activities.deliverWebhookAttempt = async (input: WebhookDeliveryInput) => {
    activityBegan.set(input.eventId, Date.now());
    try {
      return await deliver(input);
    } finally {
      activityEnded.set(input.eventId, Date.now());
    }
  };
  const ours = runWorker(await createWorker({ address: temporal.address, namespace: 'default', taskQueue: config.TEMPORAL_TASK_QUEUE, activities }));

  const bareQueue = `bench-bare-${suffix}`;
  const bareDone = new Map<string, number>();
  const bare = runWorker(
    await createWorker({
      address: temporal.address,
      namespace: 'default',
      taskQueue: bareQueue,
      activities: {
        async noop() {
          bareDone.set(Context.current().info.workflowExecution!.workflowId, Date.now());
        },
      },
      workflowBundle: await bundleWorkflowCode({ workflowsPath: require.resolve('./support/bare.workflow') }),
    }),
  );
  const dispatcher = new EventDispatcher(services);
  try {
    const orgId = (await new ApiKeyService(orm.em.fork() as EntityManager).ensureOrganization(`bench-${suffix}`)).id;
    const hookId = `wh_bench${randomBytes(6).toString('hex')}`;
    await orm.em.getConnection().execute(
      `insert into webhooks (id, organization_id, name, url, events, secret, active, max_retries, retry_delay_ms)
       values (?, ?, 'bench', ?, '{workflow.completed}', ?, true, 3, 1000)`,
      [hookId, orgId, receiver.url('/bench'), sealSecret(config, 'bench-secret-0123456789', sealedAt.webhookSecret(hookId))],
    );
    dispatcher.start();

    /** Commits `count` events in one transaction; returns their ids and the moment before the commit. */
    const emit = async (count: number, round: number) => {
      const em = orm.em.fork() as EntityManager;
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        ids.push(recordEvent(em, { organizationId: orgId, type: 'workflow.completed', data: { workflow_id: 'wf_bench', execution_id: `exec_${round}_${i}`, status: 'success', duration_ms: 1, customer_id: null, channel: 'whatsapp' } }).id);
      }
      const t0 = Date.now();
      await em.flush();
      return { ids, t0 };
    };

    const runOurs = async (round: number): Promise<Round> => {
      const already = receiver.requestsTo('/bench').length;
      const { result: { ids, t0, reqs }, cost } = await perEvent(n, () =>
        cpuProfile(round === 0 && profileFile ? `${profileFile}.ours.cpuprofile` : undefined, async () => {
          const emitted = await emit(n, round);
          return { ...emitted, reqs: (await receiver.waitFor('/bench', already + n, 600_000)).slice(already) };
        }),
      );
      const mine = new Set(ids);
      if (reqs.some((r) => !mine.has(r.headers['x-service-event-id'] ?? ''))) throw new Error('a request for another round’s event arrived');
      const end = Math.max(...reqs.map((r) => r.at));
      const lat = reqs.map((r) => r.at - t0);
      // Outside the timed part: every delivery finished, logged, and its event stamped.
      await Promise.all(ids.map((id) => services.temporal.client.workflow.getHandle(deliveryWorkflowId(id, hookId)).result()));
      let check = { logs: 0, undispatched: -1 };
      await until(`round ${round + 1}'s log rows and dispatch stamps`, async () => {
        const rows = await orm.em.fork().getConnection().execute<Array<{ logs: number; undispatched: number }>>(
          `select (select count(*)::int from webhook_logs where event_id in (select jsonb_array_elements_text(?::jsonb)) and status = 'success') as logs,
                  (select count(*)::int from events where dispatched_at is null) as undispatched`,
          [JSON.stringify(ids)],
        );
        check = rows[0]!;
        return check.logs === n && check.undispatched === 0;
      }, 30_000).catch(() => {
        throw new Error(`round ${round + 1}: ${check.logs} of ${n} log rows, ${check.undispatched} events undispatched`);
      });
      const byEvent = new Map(reqs.map((r) => [r.headers['x-service-event-id']!, r.at]));
      const phases: Record<string, number[]> = { 'event→start call': [], 'start call': [], 'start→activity': [], 'activity→receipt': [], 'receipt→activity end': [] };
      for (const id of ids) {
        const wf = deliveryWorkflowId(id, hookId);
        const [c, s, b, r, e] = [startCalled.get(wf)!, startReturned.get(wf)!, activityBegan.get(id)!, byEvent.get(id)!, activityEnded.get(id)!];
        phases['event→start call']!.push(c - t0);
        phases['start call']!.push(s - c);
        phases['start→activity']!.push(b - s);
        phases['activity→receipt']!.push(r - b);
        phases['receipt→activity end']!.push(e - r);
      }
      return { rate: n / ((end - t0) / 1000), p50: pct(lat, 50), p99: pct(lat, 99), ...cost, phases, load: load1() };
    };

    const runBare = async (round: number): Promise<Round> => {
      const ids = Array.from({ length: n }, (_, i) => `bench-bare-${suffix}-${round}-${i}`);
      const { result: t0, cost } = await perEvent(n, async () => {
        const t0 = Date.now();
        await cpuProfile(round === 0 && profileFile ? `${profileFile}.bare.cpuprofile` : undefined, async () => {
          await pool(n, DISPATCH_START_CONCURRENCY, async (i) => {
            await services.temporal.client.workflow.start('bareStepsWorkflow', {
              taskQueue: bareQueue,
              workflowId: ids[i]!,
              args: [1],
              workflowIdReusePolicy: 'REJECT_DUPLICATE',
              workflowIdConflictPolicy: 'USE_EXISTING',
            });
          });
          await until('the bare activities', () => ids.every((id) => bareDone.has(id)));
        });
        return t0;
      });
      const done = ids.map((id) => bareDone.get(id)!);
      const lat = done.map((d) => d - t0);
      const phases: Record<string, number[]> = { 'burst→start call': [], 'start call': [], 'start→activity': [] };
      for (const id of ids) {
        const [c, s] = [startCalled.get(id)!, startReturned.get(id)!];
        phases['burst→start call']!.push(c - t0);
        phases['start call']!.push(s - c);
        phases['start→activity']!.push(bareDone.get(id)! - s);
      }
      await Promise.all(ids.map((id) => services.temporal.client.workflow.getHandle(id).result()));
      return { rate: n / ((Math.max(...done) - t0) / 1000), p50: pct(lat, 50), p99: pct(lat, 99), ...cost, phases, load: load1() };
    };

    log(machineLine());
    log(`webhooks benchmark: events=${n} rounds=${rounds} start concurrency=${DISPATCH_START_CONCURRENCY} temporal=${temporal.address}`);
    // Warm-up: one delivery and one bare workflow, so neither side pays first-use costs (TLS session, workflow caches).
    {
      const { ids } = await emit(1, -1);
      await receiver.waitFor('/bench', 1, 60_000);
      await services.temporal.client.workflow.getHandle(deliveryWorkflowId(ids[0]!, hookId)).result();
      await services.temporal.client.workflow.execute('bareStepsWorkflow', { taskQueue: bareQueue, workflowId: `bench-bare-warm-${suffix}`, args: [1] });
    }

    const oursRounds: Round[] = [];
    const bareRounds: Round[] = [];
    const ms = (v: number) => v.toFixed(0);
    const show = (label: string, r: Round, unit: string, what: string) => {
      log(`round ${label}: ${r.rate.toFixed(1)} ${unit}  ${what} p50 ${ms(r.p50)} ms p99 ${ms(r.p99)} ms  CPU ${r.cpuMs.toFixed(2)} ms/event (this process), ${r.machineCpuMs.toFixed(2)} ms/event (machine)  load ${r.load}`);
      log(`    peak RSS ${r.rssMiB.toFixed(0)} MiB; threads, CPU ms/event: ${Object.entries(r.threads).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
    };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['ours', 'bare'] as const) : (['bare', 'ours'] as const);
      for (const side of order) {
        if (side === 'ours') {
          const o = await runOurs(round);
          oursRounds.push(o);
          show(`${round + 1} ours`, o, 'deliveries/s', 'event→receipt');
        } else {
          const b = await runBare(round);
          bareRounds.push(b);
          show(`${round + 1} bare`, b, 'workflows/s ', 'start→done   ');
        }
      }
    }
    const over = (xs: Round[], f: (x: Round) => number) => roundStats(xs.map(f));
    const phaseLines = (xs: Round[]) =>
      Object.keys(xs[0]!.phases!).map(
        (k) => `    ${`${k} p50`.padEnd(28)}${formatStats(over(xs, (x) => pct(x.phases![k]!, 50)), 'ms')}   p99 ${formatStats(over(xs, (x) => pct(x.phases![k]!, 99)), 'ms')}`,
      );
    const oursRate = over(oursRounds, (o) => o.rate);
    const bareRate = over(bareRounds, (b) => b.rate);
    log(machineLine());
    const summary = (title: string, xs: Round[], rate: RoundStats, labels: { rate: string; latency: string; unit: string }) => {
      const row = (label: string, figures: string) => log(`    ${label.padEnd(24)}${figures}`);
      log(title);
      row(labels.rate, formatStats(rate, '/s', 1));
      row(`${labels.latency} p50`, formatStats(over(xs, (x) => x.p50), 'ms'));
      row(`${labels.latency} p99`, formatStats(over(xs, (x) => x.p99), 'ms'));
      row(`CPU per ${labels.unit}`, `${formatStats(over(xs, (x) => x.cpuMs), 'ms', 2)} this process; ${formatStats(over(xs, (x) => x.machineCpuMs), 'ms', 2)} machine`);
      row('peak RSS', formatStats(over(xs, (x) => x.rssMiB), 'MiB'));
      for (const l of phaseLines(xs)) log(l);
    };
    summary(`ours (${n} events committed at once → receipt), ${rounds} rounds:`, oursRounds, oursRate, { rate: 'deliveries/s', latency: 'event→receipt', unit: 'delivery' });
    summary(`bare Temporal (one workflow, one no-op activity per event, ${DISPATCH_START_CONCURRENCY} starts in flight), ${rounds} rounds:`, bareRounds, bareRate, {
      rate: 'workflows/s',
      latency: 'start→done',
      unit: 'workflow',
    });
    log(`per-round ratio             ${formatStats(roundStats(oursRounds.map((o, i) => o.rate / bareRounds[i]!.rate)), '', 2)}`);
    log(`ratio=${(oursRate.median / bareRate.median).toFixed(2)}`);
  } finally {
    await dispatcher.stop();
    await Promise.all([ours.shutdown(), bare.shutdown()]);
    await closeServices(services);
    await db.drop().catch(() => undefined);
    await temporal.stop();
    await receiver.close();
  }
}
