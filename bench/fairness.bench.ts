/**
 * `npm run bench -- fairness [--flood 3000] [--flood3 1000] [--flood-concurrency 20] [--idle 400] [--every 200] [--fairness off] [--paced 25,50,70,85] [--paced-seconds 60]`:
 * whether one organization's flood delays another organization's conversations, and
 * whether sharing the service slows the flood more than the other's share (docs/performance.md,
 * section `fairness`).
 *
 * Organization B sends one message every `every` ms to a greeter workflow (one message
 * node); its latency is message sent → the greeting's arrival at the channel provider (a
 * local HTTP server in this process, CHANNEL_PROVIDER_URL). Phases, in one run, on the
 * same processes:
 * - idle: B alone, `idle` messages (the baseline). 400 by default: the p99 of 50 was their
 *   maximum and that of 150 their second largest, which moved the ratio by half from run
 *   to run (docs/performance.md); the flood's own p99 is taken over ~800;
 * - A alone: organization A sends `flood` messages to its own greeter at once
 *   (`flood-concurrency` requests in flight); its rate (greetings/s) is the reference;
 * - flood: A floods again while B keeps sending until A's last greeting has arrived; A's
 *   rate against its rate alone (goal ≥ 70 %);
 * - three floods: organizations X, Y and Z send `flood3` messages each at once (`flood-concurrency`
 *   in flight each) while B keeps sending; each one's rate while all three run, and their
 *   spread (goal: each within ±25 %). `--flood3 0` skips it;
 * - paced floods (`--paced`, none by default): for each percentage, A's flood sent at that
 *   share of its rate alone for `paced-seconds` while B trickles; B's p99 against idle, A's
 *   rate, and the machine's busy share (every process, /proc/stat). This is how B's latency
 *   grows with the load a flood puts on the shared cores, whatever orders the work.
 * The service runs as deployed: the API and the worker in processes of their own
 * (`src/main.ts api|worker`), on a Temporal dev server this bench starts, with task-queue
 * fairness on (`--fairness off`: without, to see what it changes). Last line:
 * `ratio=<B's p99 during A's flood / B's idle p99>` (goal: ≤ 2).
 */
import { generateSecretsKey } from '../src/secrets';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { CAPACITY_REDUCED_MSG } from '../src/background-tasks';
import { freePort, spawnProcess, type SpawnedProcess } from '../test/helpers/process';
import { benchDatabase, benchTemporal, historyEventMs, log, machineBusyMs, machineLine, optionArg, percentile as pct, positiveIntArg as arg } from './lib';

/** The channel provider: when each customer's first outbound message arrived (performance.now()), by the customer's id as sent (`to`). */
async function startArrivals(): Promise<{ url: string; firstArrival: Map<string, number>; close(): Promise<void> }> {
  const firstArrival = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as { to?: string };
      if (body.to && !firstArrival.has(body.to)) firstArrival.set(body.to, at);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/send`,
    firstArrival,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

async function untilHealthy(base: string, p: SpawnedProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the API process did not become healthy:\n${p.lines.join('\n')}`);
}

async function until(condition: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Where B's latency went in a phase (`idle`, `flood`, `paced<percent>`), from its runs' Temporal histories:
 * commit → the run's start (the API's admission and its start call), the first workflow
 * task's wait in the queue and its run (the greeting's send is a local activity inside it).
 */
async function explainStages(
  address: string,
  orm: Awaited<ReturnType<typeof createOrm>>,
  suffix: string,
  phase: string,
  out: (line: string) => void,
): Promise<void> {
  const rows = await orm.em.fork().getConnection().execute<Array<{ id: string; started_at: Date }>>(
    `select e.id, e.started_at from executions e join organizations o on o.id = e.organization_id
     where o.name = ? and exists (select 1 from customers c where c.id = e.customer_id and c.external_id like ?)`,
    [`bench-b-${suffix}`, `b-${phase}-%`],
  );
  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  const stages: Record<string, number[]> = { 'commit → run started': [], 'workflow task queued': [], 'workflow task ran (the send, a local activity, within it)': [] };
  try {
    for (const row of rows) {
      const { events } = await client.workflow.getHandle(row.id).fetchHistory();
      const at = (type: string) => {
        const e = events?.find((x) => x[type as keyof typeof x] != null);
        return e ? historyEventMs(e) : undefined;
      };
      const t = [new Date(row.started_at).getTime(), at('workflowExecutionStartedEventAttributes'), at('workflowTaskScheduledEventAttributes'), at('workflowTaskStartedEventAttributes'), at('workflowTaskCompletedEventAttributes')];
      if (t.some((x) => x === undefined)) {
        if (row === rows[0]) out(`    (first history: ${events?.map((e) => Object.keys(e).find((k) => k.endsWith('EventAttributes') && e[k as keyof typeof e] != null)).join(', ')})`);
        continue;
      }
      const [commit, started, , wftStarted, wftDone] = t as number[];
      stages['commit → run started']!.push(started! - commit!);
      stages['workflow task queued']!.push(wftStarted! - started!);
      stages['workflow task ran (the send, a local activity, within it)']!.push(wftDone! - wftStarted!);
    }
  } finally {
    await connection.close();
  }
  out(`  B's ${phase} runs, stage by stage (${rows.length} histories):`);
  for (const [stage, xs] of Object.entries(stages)) if (xs.length) out(`    B ${phase}, ${stage}: p50 ${pct(xs, 50).toFixed(0)} ms, p99 ${pct(xs, 99).toFixed(0)} ms`);
}

const summary = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(0)} ms, p99 ${pct(xs, 99).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms (${xs.length} messages)`;

export async function run(args: string[]): Promise<void> {
  const flood = arg(args, 'flood', 3000);
  const floodConcurrency = arg(args, 'flood-concurrency', 20);
  const idle = arg(args, 'idle', 400);
  const every = arg(args, 'every', 200);
  const fairness = optionArg(args, 'fairness') !== 'off';
  const flood3 = optionArg(args, 'flood3') === '0' ? 0 : arg(args, 'flood3', Math.round(flood / 3));
  const paced = (optionArg(args, 'paced') ?? '').split(',').filter((p) => p !== '').map(Number);
  if (paced.some((p) => !Number.isInteger(p) || p <= 0 || p > 100)) throw new Error('--paced takes percentages from 1 to 100, comma-separated');
  const pacedSeconds = arg(args, 'paced-seconds', 60);
  const db = await benchDatabase();
  const temporal = await benchTemporal({ own: true, fairness });
  const arrivals = await startArrivals();
  const suffix = randomBytes(4).toString('hex');
  const env = {
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '20',
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-fairness-${suffix}`,
    SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY ?? generateSecretsKey(),
    REDIS_KEY_PREFIX: `wfa-bench:${suffix}:`,
    CHANNEL_PROVIDER_URL: arrivals.url,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_CREDENTIAL_PER_HOUR: '1000000',
    RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '1000000',
    RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '1000000',
  };
  loadConfig({ ...process.env, ...env });
  const orm = await createOrm(entities, db.url, 5);
  await migrate(orm);
  const port = await freePort();
  const cwd = path.resolve(__dirname, '..');
  const spawnRole = (role: string, extra: Record<string, string> = {}) =>
    spawnProcess(process.execPath, ['--require', 'tsx/cjs', 'src/main.ts', role], { cwd, env: { ...env, MIGRATE_ON_START: 'false', ...extra } });
  const api = spawnRole('api', { PORT: String(port), HOST: '127.0.0.1' });
  const worker = spawnRole('worker');
  const base = `http://127.0.0.1:${port}`;
  try {
    await untilHealthy(base, api);
    const keys = new ApiKeyService(orm.em.fork());
    const greeter = async (name: string) => {
      const org = await keys.ensureOrganization(`bench-${name}-${suffix}`);
      const { key } = await new ApiKeyService(orm.em.fork()).create(org.id, 'bench', 'admin');
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
      const post = async (p: string, body?: unknown) => {
        const res = await fetch(`${base}${p}`, { method: 'POST', headers, ...(body ? { body: JSON.stringify(body) } : {}) });
        if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
        return (await res.json()) as { data: Record<string, any> };
      };
      const wf = await post('/v1/workflows', {
        name: 'Greeter',
        channel: 'whatsapp',
        configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'hello', type: 'message', content: `Hello from ${name}!` }] },
      });
      await post(`/v1/workflows/${wf.data.id}/activate`);
      return { key, send: (customer: string) => post('/v1/messages', { channel: 'whatsapp', customer_id: customer, message: 'hi' }) };
    };
    const a = await greeter('a');
    const sendB = (await greeter('b')).send;
    const floodOrgs = flood3 > 0 ? await Promise.all(['x', 'y', 'z'].map((name) => greeter(name))) : [];
    // The worker is up once a greeting arrives.
    await sendB('b-warmup');
    await until(() => arrivals.firstArrival.has('b-warmup'), 'the worker to answer', 400_000).catch((err: Error) => {
      throw new Error(`${err.message}; worker output:\n${worker.lines.slice(-20).join('\n')}`);
    });

    log(machineLine());
    log(`fairness benchmark: flood=${flood} (concurrency ${floodConcurrency}), 3 organizations × ${flood3}, B every ${every} ms, idle baseline ${idle} messages, task-queue fairness ${fairness ? 'on' : 'OFF'}, temporal=${temporal.address}`);

    /** B sends one message every `every` ms while `more()`; the latency of each accepted one, once its greeting arrived, by the message's index. */
    const runB = async (phase: string, more: (i: number) => boolean): Promise<Map<number, number>> => {
      const sent: Array<[string, number]> = [];
      const answered: number[] = [];
      const refused = new Set<string>();
      const pending: Promise<unknown>[] = [];
      for (let i = 0; more(i); i++) {
        const customer = `b-${phase}-${i}`;
        const at = performance.now();
        sent.push([customer, at]);
        pending.push(
          sendB(customer).then(
            () => answered.push(performance.now() - at),
            (err: Error) => (refused.add(customer), log(`B ${customer}: ${err.message}`)),
          ),
        );
        await new Promise((r) => setTimeout(r, Math.max(0, at + every - performance.now())));
      }
      await Promise.all(pending);
      // A refused message (a 503 on a saturated machine) has no greeting to wait for; it is counted, not timed.
      const accepted = sent.filter(([c]) => !refused.has(c));
      await until(() => accepted.every(([c]) => arrivals.firstArrival.has(c)), `B's ${phase} greetings`, 300_000);
      // Where B's time goes: the API's answer (its request, the commit) against the rest (the run).
      log(`  B ${phase}: POST answered ${summary(answered)}${refused.size > 0 ? `; ${refused.size} refused` : ''}`);
      return new Map(sent.flatMap(([c, at], i) => (refused.has(c) ? [] : [[i, arrivals.firstArrival.get(c)! - at] as [number, number]])));
    };

    /** Starts a measurement: what it returns tells the machine's busy share since (every process, /proc/stat). */
    const busySince = () => {
      const busy0 = machineBusyMs();
      const at = performance.now();
      return () => `machine ${((100 * (machineBusyMs() - busy0)) / ((performance.now() - at) * os.cpus().length)).toFixed(0)} % busy`;
    };
    const idleBusy = busySince();
    const idleLatencies = [...(await runB('idle', (i) => i < idle)).values()];
    log(`  B alone (idle service):  ${summary(idleLatencies)}; ${idleBusy()}`);

    /** When each greeting of customers named `prefix…` arrived (performance.now()). */
    const arrivalsOf = (prefix: string) => [...arrivals.firstArrival].filter(([c]) => c.startsWith(prefix)).map(([, at]) => at);
    /**
     * A flood of `count` messages per organization from a process of its own
     * (bench/support/flood-sender.ts), so that its requests do not delay this process's
     * timing of B's greetings. It is loaded first and told to begin once ready, so its
     * start-up is not part of the flood. `done()` resolves once every greeting arrived.
     */
    const startFlood = async (orgs: Array<{ key: string; prefix: string }>, count: number, perSecond?: number) => {
      const sender = spawnProcess(process.execPath, ['--require', 'tsx/cjs', 'bench/support/flood-sender.ts'], {
        cwd,
        env: {
          FLOOD_BASE: base,
          FLOOD_KEYS: orgs.map((o) => o.key).join(','),
          FLOOD_PREFIXES: orgs.map((o) => o.prefix).join(','),
          FLOOD_COUNT: String(count),
          FLOOD_CONCURRENCY: String(floodConcurrency),
          ...(perSecond ? { FLOOD_RATE: String(perSecond) } : {}),
        },
      });
      await sender.waitForLine(/^ready$/, 60_000);
      const startedAt = performance.now();
      sender.child.kill('SIGUSR2');
      let failed: Error | undefined;
      const requestsDone = sender.waitForLine(/^done \d+$/, 3_600_000).catch((err: Error) => void (failed = err));
      /** Requests answered so far, from the sender's progress lines (every 100, and the total). */
      const sent = () => {
        const last = sender.lines.findLast((l) => /^(sent|done) \d+$/.test(l));
        return last ? Number(last.split(' ')[1]) : 0;
      };
      const arrived = () => orgs.every((o) => arrivalsOf(o.prefix).length >= count);
      return {
        startedAt,
        sent,
        arrived: () => {
          if (failed) throw failed;
          return arrived();
        },
        done: async () => {
          await until(() => (failed ? true : arrived()), 'the flood\'s greetings', 3_600_000);
          await requestsDone;
          if (failed) throw failed;
        },
      };
    };
    /** Greetings per second of customers `prefix…` from `from` to `to` (default: its last greeting). */
    const rateOf = (prefix: string, from: number, to?: number) => {
      const times = arrivalsOf(prefix);
      const end = to ?? Math.max(...times);
      return times.filter((t) => t <= end).length / ((end - from) / 1000);
    };
    /** A pause for the API's "recently active" windows (2 s) and the worker's backlog to empty between phases. */
    const pause = () => new Promise((r) => setTimeout(r, 3_000));

    // A alone: the rate the service gives one organization's flood, the reference for A's rate with B.
    await pause();
    const alone = await startFlood([{ key: a.key, prefix: 'a0-' }], flood);
    await alone.done();
    const aloneRate = rateOf('a0-', alone.startedAt);
    log(`  A alone: ${flood} greetings in ${((Math.max(...arrivalsOf('a0-')) - alone.startedAt) / 1000).toFixed(1)} s (${aloneRate.toFixed(1)} executions/s)`);

    await pause();
    const floodA = await startFlood([{ key: a.key, prefix: 'a-' }], flood);
    // From the sender's go: its loading is not the flood's load.
    const floodBusy = busySince();
    const floodStart = floodA.startedAt;
    // Which of B's messages were sent while A's requests were still arriving (the API's share)
    // and which after (the runs' share).
    const duringRequests = new Set<number>();
    let aDone = false;
    const floodByIndex = await runB('flood', (i) => {
      if (floodA.sent() < flood) duringRequests.add(i);
      return !aDone && (aDone = floodA.arrived()) === false;
    });
    const floodLatencies = [...floodByIndex.values()];
    const split = (during: boolean) => [...floodByIndex].filter(([i]) => duringRequests.has(i) === during).map(([, ms]) => ms);
    if (split(true).length > 0 && split(false).length > 0) {
      log(`    B while A's requests arrived: ${summary(split(true))}`);
      log(`    B after them (A's runs only): ${summary(split(false))}`);
    }
    await floodA.done();
    const floodSeconds = (Math.max(...arrivalsOf('a-')) - floodStart) / 1000;
    log(`  B during A's flood:      ${summary(floodLatencies)}`);
    const withBRate = rateOf('a-', floodStart);
    log(`  A's flood: ${floodA.sent()} messages accepted, ${flood} greetings in ${floodSeconds.toFixed(1)} s (${withBRate.toFixed(1)} executions/s), ${floodBusy()}`);
    log(`  A's rate with B active ${withBRate.toFixed(1)}/s against alone ${aloneRate.toFixed(1)}/s: ${((100 * withBRate) / aloneRate).toFixed(0)} % (goal: ≥ 70 %)`);
    const ratio = pct(floodLatencies, 99) / pct(idleLatencies, 99);
    log(`  B's p50 ${(pct(floodLatencies, 50) / pct(idleLatencies, 50)).toFixed(2)}x and p99 ${ratio.toFixed(2)}x idle (goal: p99 ≤ 2x)`);

    if (floodOrgs.length > 0) {
      // Three organizations flood at once while B trickles: their rates over the time all three
      // were still running (until the first one's last greeting), and their spread.
      await pause();
      const prefixes = ['x-', 'y-', 'z-'];
      const three = await startFlood(floodOrgs.map((o, i) => ({ key: o.key, prefix: prefixes[i]! })), flood3);
      let threeDone = false;
      const threeLatencies = [...(await runB('flood3', () => !threeDone && (threeDone = three.arrived()) === false)).values()];
      await three.done();
      const firstDone = Math.min(...prefixes.map((p) => Math.max(...arrivalsOf(p))));
      const rates = prefixes.map((p) => rateOf(p, three.startedAt, firstDone));
      const mean = rates.reduce((x, y) => x + y, 0) / rates.length;
      const spread = Math.max(...rates.map((r) => Math.abs(r - mean) / mean));
      log(`  B during 3 organizations' floods: ${summary(threeLatencies)}; p99 ${(pct(threeLatencies, 99) / pct(idleLatencies, 99)).toFixed(2)}x idle`);
      log(`  3 floods at once, rates while all three ran (${((firstDone - three.startedAt) / 1000).toFixed(1)} s): ${rates.map((r, i) => `${'XYZ'[i]} ${r.toFixed(1)}/s`).join(', ')}; together ${(rates.reduce((x, y) => x + y, 0)).toFixed(1)}/s`);
      log(`  3 floods' spread: each within ±${(100 * spread).toFixed(0)} % of their mean, slowest/fastest ${(Math.min(...rates) / Math.max(...rates)).toFixed(2)} (goal: ±25 %)`);
      log(`  3 floods, whole runs: ${prefixes.map((p, i) => `${'XYZ'[i]} ${rateOf(p, three.startedAt).toFixed(1)}/s`).join(', ')}`);
    }
    for (const percent of paced) {
      // A at a share of its rate alone: B's latency against the load the flood puts on the cores.
      await pause();
      const perSecond = (aloneRate * percent) / 100;
      const prefix = `ap${percent}-`;
      const pacedFlood = await startFlood([{ key: a.key, prefix }], Math.max(1, Math.round(perSecond * pacedSeconds)), perSecond);
      const pacedBusy = busySince();
      let pacedDone = false;
      const latencies = [...(await runB(`paced${percent}`, () => !pacedDone && (pacedDone = pacedFlood.arrived()) === false)).values()];
      const busy = pacedBusy();
      await pacedFlood.done();
      const pacedRate = rateOf(prefix, pacedFlood.startedAt);
      log(
        `  paced ${percent} %: A ${pacedRate.toFixed(1)}/s (${((100 * pacedRate) / aloneRate).toFixed(0)} % of alone), ` +
          `${busy}; B ${summary(latencies)}; p99 ${(pct(latencies, 99) / pct(idleLatencies, 99)).toFixed(2)}x idle`,
      );
    }
    // Where a slow start came from: the API's Temporal start (cut off at TEMPORAL_CALL_TIMEOUT_MS
    // under the flood) leaves the row to the worker's reconciler, seconds later.
    const starts = await orm.em.fork().getConnection().execute<Array<{ org: string; n: number; late: number; p99_ms: number }>>(
      `select o.name as org, count(*)::int as n,
              count(*) filter (where e.temporal_started_at > e.started_at + interval '2 seconds')::int as late,
              round(percentile_cont(0.99) within group (order by extract(epoch from e.temporal_started_at - e.started_at) * 1000))::int as p99_ms
         from executions e join organizations o on o.id = e.organization_id group by o.name order by o.name`,
    );
    for (const r of starts) log(`  ${r.org}: ${r.n} executions, ${r.late} started more than 2 s after their commit, commit → Temporal start p99 ${r.p99_ms} ms`);
    await explainStages(temporal.address, orm, suffix, 'idle', log);
    await explainStages(temporal.address, orm, suffix, 'flood', log);
    for (const percent of paced) await explainStages(temporal.address, orm, suffix, `paced${percent}`, log);
    const reduced = api.lines.filter((l) => l.includes(CAPACITY_REDUCED_MSG)).map((l) => (JSON.parse(l) as { calls_in_flight: number }).calls_in_flight);
    log(`  API: Temporal calls in flight below their most in ${reduced.length} of its 10 s reports${reduced.length ? ` (least ${Math.min(...reduced)})` : ''}`);
    const cutOff = api.lines.filter((l) => l.includes('cut off at its timeout')).length;
    log(`  API: ${cutOff} Temporal calls cut off at TEMPORAL_CALL_TIMEOUT_MS (left to the reconciler)`);
    process.stdout.write(`ratio=${ratio.toFixed(2)}\n`);
  } finally {
    await Promise.allSettled([api.kill('SIGTERM'), worker.kill('SIGTERM')]);
    await orm.close();
    await arrivals.close();
    await temporal.stop();
    await db.drop();
  }
}
