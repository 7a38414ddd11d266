/**
 * The replicated drill: 2 API and 2 worker processes on one PostgreSQL, Redis and Temporal
 * (`npm run chaos -- --replicas 2`, and a smaller run in test/integration/replicas.test.ts).
 *
 * Through BOTH APIs, alternately, it sends inbound messages (each its own
 * `provider_message_id`), fires an api trigger and, on Temporal, triggers the ticks of a
 * schedule trigger; two webhooks are subscribed to every `workflow.completed` and
 * `trigger.activated`. Mid-load one API and one worker are SIGKILLed and restarted; the
 * restarted API dies once more at a failpoint after a message's commit (its
 * `Idempotency-Key` answer cut off). Its failpoint (`idempotency.before_store`) is armed at
 * random: it dies after the commit of a request it picks by chance, a message or a fire,
 * before that request's answer is stored or sent. Like
 * a real client, it resends every request that got no 2xx with the SAME `Idempotency-Key`
 * (and provider message id), honouring 409 IDEMPOTENCY_KEY_IN_USE's Retry-After: the resend
 * of a request whose work committed is answered from its recovery point. Then,
 * from PostgreSQL, Temporal's visibility and the webhook receiver, it checks:
 * - every accepted message handled exactly once: one inbound row, one execution, each step
 *   once, each reply sent once, every execution `success`;
 * - every accepted fire recorded once and its execution `success`;
 * - nothing doubled: `doubled` counts the messages and fires recorded more than once;
 * - where each API kill landed: the requests in flight on a killed API, by their
 *   Idempotency-Key row (after their work's commit, before it, before their claim); at
 *   least one kill after a commit, and those requests answered on resend from what committed;
 * - each schedule tick (a Temporal run) fired once: one firing per run, one run per firing;
 * - no execution started twice by competing starters/reconcilers: one Temporal run per
 *   execution id, one `workflow.started` event per execution, every finished execution
 *   stamped `temporal_started_at`;
 * - every event delivered to every subscribed webhook (at least once; duplicates printed);
 * - an api trigger's rate limit exact across both APIs: of 2×limit concurrent fires
 *   spread over both, exactly `limit` accepted.
 * Used by scripts only through `runReplicatedDrill`; it starts and stops its own processes.
 */
import path from 'node:path';
import { Client as TemporalClient, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import { startHttpsReceiver } from '../../test/helpers/https-receiver';
import { freePort, type SpawnedProcess, spawnProcess } from '../../test/helpers/process';
import { EXECUTION_WORKFLOW_TYPE } from '../../temporal/executions.shared';
import { SCHEDULED_TRIGGER_WORKFLOW_TYPE, triggerScheduleId } from '../../temporal/triggers.shared';

export interface DrillOptions {
  /** The service's environment: DATABASE_URL, REDIS_URL / REDIS_KEY_PREFIX, TEMPORAL_ADDRESS, TEMPORAL_TASK_QUEUE, ... */
  env: Record<string, string | undefined>;
  /** Mints an admin API key once the processes have migrated the database. */
  createKey(): Promise<string>;
  /** Inbound messages sent, at `rate` per second. */
  messages: number;
  rate: number;
  /** Api-trigger fires, interleaved with the messages. */
  fires: number;
  /** Schedule ticks triggered on Temporal during the load (plus the cron's own, each minute). */
  ticks: number;
  /** The rate-limited api trigger's limit per hour; 2× this many fires test it. */
  rateLimit: number;
  /** Bound on waiting for executions and deliveries to drain. */
  drainTimeoutMs: number;
  /** The restarted API's FAILPOINTS (default `idempotency.before_store:0.34`: after the commit of a request picked at random). */
  cutOffFailpoint?: string;
  log(msg: string): void;
}

export interface DrillCheck {
  ok: boolean;
  what: string;
}

export interface DrillReport {
  checks: DrillCheck[];
  figures: Record<string, number>;
}

const root = path.resolve(__dirname, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const WEBHOOK_EVENTS = ['workflow.completed', 'trigger.activated'];
/** The deadline of each of the drill's own Temporal calls (describe, list, trigger, pause). */
const TEMPORAL_CALL_MS = 30_000;

/** Polls `fn` until it holds; `progress`, when given, is logged every 30 s meanwhile (slow, or stuck?). */
async function until(what: string, fn: () => Promise<boolean>, timeoutMs: number, progress?: () => Promise<string>, log?: (msg: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let nextProgress = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await fn().catch(() => false)) return;
    if (progress && log && Date.now() >= nextProgress) {
      nextProgress += 30_000;
      log(`waiting for ${what}: ${await progress().catch((err: unknown) => String(err))}`);
    }
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Sent {
  kind: 'message' | 'fire';
  idempotencyKey: string;
  path: string;
  body: Record<string, unknown>;
  status: number;
  /** Answers 409 IDEMPOTENCY_KEY_IN_USE while resending (a claim whose API died, until its lease lapsed). */
  inUse: number;
  /** The API process that last got it: a SIGKILLed one cut its answer off. */
  to?: SpawnedProcess;
  /** The last try's connection was refused (the API was down, or not listening yet): it never reached the API. */
  refused?: boolean;
  /** The last answer was `Idempotent-Replayed: true` (a stored answer, or one rebuilt from a recovery point). */
  replayed?: boolean;
}

/**
 * Where an API's death left a request it was handling, read from its Idempotency-Key row
 * before the resend: `after commit` when its work committed (a recovery point, or its answer
 * stored but never sent), `before commit` when only its claim was taken, `not claimed` when
 * it never got that far. Requests refused while the API was down are not counted.
 */
type CutOffAt = 'after commit' | 'before commit' | 'not claimed';

export async function runReplicatedDrill(opts: DrillOptions): Promise<DrillReport> {
  const { log } = opts;
  const receiver = await startHttpsReceiver();
  const env: Record<string, string | undefined> = {
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    EXECUTION_RECONCILE_INTERVAL_MS: '1000',
    EXECUTION_RECONCILE_GRACE_MS: '2000',
    RATE_LIMIT_CREDENTIAL_PER_HOUR: '1000000',
    RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '1000000',
    RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '1000000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // The receiver's own CA, trusted by the workers' webhook sender.
    NODE_EXTRA_CA_CERTS: receiver.caFile,
    ...opts.env,
  };
  const ports = [await freePort(), await freePort()];
  // Inside the test suite, the run's compiled copy of the service (test/helpers/service-build.ts)
  // starts in about half the CPU of tsx; `npm run chaos` runs the sources as `npm start` does.
  const build = process.env.TEST_SERVICE_BUILD_DIR;
  const entry = build ? [path.join(build, 'src', 'main.js')] : ['--require', 'tsx/cjs', 'src/main.ts'];
  const node = (args: string[], extra: Record<string, string>) =>
    spawnProcess(process.execPath, [...entry, ...args], { cwd: root, env: { ...env, ...extra } });
  const everyProcess: SpawnedProcess[] = [];
  const startApi = async (i: number, extra: Record<string, string> = {}) => {
    const p = node(['api'], { PORT: String(ports[i]), ...extra });
    everyProcess.push(p);
    await p.waitForLine(/API listening/, 180_000);
    return p;
  };
  const startWorker = async () => {
    const p = node(['worker'], {});
    everyProcess.push(p);
    await p.waitForLine(/worker running/, 180_000);
    return p;
  };

  const checks: DrillCheck[] = [];
  const figures: Record<string, number> = {};
  const check = (ok: boolean, what: string) => {
    checks.push({ ok, what });
    log(`${ok ? 'PASS' : 'FAIL'} ${what}`);
  };
  const db = new PgClient({ connectionString: env.DATABASE_URL });
  let temporal: Connection | undefined;
  try {
    // All four at once: on a fresh database they also race to migrate (they take turns).
    const t0 = Date.now();
    const [api0, api1, worker0, worker1] = await Promise.all([startApi(0), startApi(1), startWorker(), startWorker()]);
    const apis = [api0, api1];
    const workers = [worker0, worker1];
    log(`2 APIs (:${ports[0]}, :${ports[1]}) and 2 workers up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    await db.connect();
    temporal = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
    const tclient = new TemporalClient({ connection: temporal, namespace: env.TEMPORAL_NAMESPACE ?? 'default' });
    // The SDK gives its calls no deadline: one to a stalled server would hang the drill for
    // good. Each of the drill's calls fails after TEMPORAL_CALL_MS instead (and is asked again).
    const rpc = <T>(fn: () => Promise<T>) => temporal!.withDeadline(Date.now() + TEMPORAL_CALL_MS, fn);

    const key = await opts.createKey();
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const base = (i: number) => `http://127.0.0.1:${ports[i % 2]}`;
    const call = async (i: number, method: string, p: string, body?: unknown) => {
      const res = await fetch(`${base(i)}${p}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const json = (await res.json().catch(() => undefined)) as { data?: Record<string, unknown> } | undefined;
      if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
      return json!.data!;
    };

    // The organization's setup, half through each API.
    const workflow = (name: string, nodes: unknown[], trigger?: unknown) =>
      call(0, 'POST', '/v1/workflows', { name, channel: 'whatsapp', configuration: { ...(trigger ? { trigger } : {}), nodes } });
    const greeter = await workflow('Drill greeter', [
      { id: 'greet', type: 'message', content: 'Hi!', next: 'follow' },
      { id: 'follow', type: 'message', content: 'How can we help?' },
    ], { type: 'keyword', keywords: ['hello'] });
    const fired = await workflow('Drill fired', [{ id: 'ack', type: 'message', content: 'fired' }]);
    for (const [i, wf] of [greeter, fired].entries()) await call(i, 'POST', `/v1/workflows/${String(wf.id)}/activate`);
    const trigger = (i: number, name: string, type: string, configuration: unknown) =>
      call(i, 'POST', '/v1/triggers', { name, type, workflow_id: fired.id, channel: 'whatsapp', configuration });
    const apiTrigger = await trigger(0, 'Drill api', 'api', { rate_limit: 100_000 });
    const limited = await trigger(1, 'Drill limited', 'api', { rate_limit: opts.rateLimit });
    const scheduled = await trigger(0, 'Drill schedule', 'schedule', { cron_expression: '* * * * *' });
    const hooks: string[] = [];
    for (const [i, name] of ['a', 'b'].entries()) {
      await call(i, 'POST', '/v1/webhooks', {
        name: `drill ${name}`,
        url: receiver.url(`/hook-${name}`),
        events: WEBHOOK_EVENTS,
        retry_policy: { max_retries: 10, retry_delay_ms: 500 },
      });
      hooks.push(`/hook-${name}`);
    }

    // ---- Load through both APIs, with one API and one worker killed mid-way ----
    const sent: Sent[] = [];
    const send = async (s: Sent, api: number): Promise<void> => {
      s.to = apis[api % 2];
      try {
        const res = await fetch(`${base(api)}${s.path}`, {
          method: 'POST',
          headers: { ...headers, 'idempotency-key': s.idempotencyKey },
          body: JSON.stringify(s.body),
          signal: AbortSignal.timeout(15_000),
        });
        s.status = res.status;
        s.replayed = res.headers.get('idempotent-replayed') === 'true';
        if (res.status === 409 && ((await res.json().catch(() => ({}))) as { error?: { code?: string } }).error?.code === 'IDEMPOTENCY_KEY_IN_USE') s.inUse++;
        else await res.arrayBuffer().catch(() => undefined);
      } catch (err) {
        s.status = 0; // No answer: the API died, or a timeout. Resent later.
        s.refused = ((err as Error).cause as { code?: string } | undefined)?.code === 'ECONNREFUSED';
      }
    };
    const inFlight = new Set<Promise<void>>();
    const launch = (s: Sent, api: number) => {
      sent.push(s);
      const p = send(s, api).finally(() => inFlight.delete(p));
      inFlight.add(p);
    };
    const fireEvery = Math.max(1, Math.floor(opts.messages / Math.max(1, opts.fires)));
    const tickEvery = Math.max(1, Math.floor(opts.messages / Math.max(1, opts.ticks)));
    const killAt = Math.floor(opts.messages * 0.4);
    let fires = 0;
    let ticks = 0;
    let ticksAsked = 0;
    let lastTick = 0;
    const scheduleHandle = tclient.schedule.getHandle(triggerScheduleId(String(scheduled.id)));
    const actionRuns = async () => new Set((await rpc(() => scheduleHandle.describe())).info.recentActions.map((a) => a.action.workflow.workflowId));
    /**
     * One tick, asked of Temporal while the load runs, counted once the schedule has started
     * a run it had not started before. A scheduled run's id carries its time to the second,
     * so two ticks the schedule takes within one second (on a loaded server, requests sent
     * 1.1 s apart can be taken together; or a tick and the cron's minute) share one run: the
     * tick is then asked again. A call a loaded Temporal times out is asked again too.
     */
    const tickOnce = async () => {
      for (let attempt = 1; attempt <= 5; attempt++) {
        await sleep(lastTick + 1100 - Date.now());
        lastTick = Date.now();
        const before = await actionRuns().catch(() => undefined);
        const asked = before && (await rpc(() => scheduleHandle.trigger(ScheduleOverlapPolicy.ALLOW_ALL)).then(
          () => true,
          (err: unknown) => (log(`schedule trigger failed (attempt ${attempt}): ${String(err)}`), false),
        ));
        if (!asked) continue;
        const started = await until('the tick to start a run', async () => [...(await actionRuns())].some((run) => !before.has(run)), 15_000).then(
          () => true,
          () => (log(`schedule tick started no new run (attempt ${attempt}): asked again`), false),
        );
        if (started) {
          ticks++;
          return;
        }
      }
    };
    let tickChain = Promise.resolve();
    let restarted: Promise<void> | undefined;
    let cutOffClaims = 0;
    let restartFailure: string | undefined;
    /** The API processes SIGKILLed: API 0 mid-load, then its restart at its failpoint. */
    const killedApis: Array<[string, SpawnedProcess]> = [];
    for (let n = 1; n <= opts.messages; n++) {
      const pmid = `drill-${n}`;
      launch(
        { kind: 'message', idempotencyKey: pmid, path: '/v1/messages', body: { channel: 'whatsapp', customer_id: `cust-${n}`, message: 'hello', provider_message_id: pmid }, status: 0, inUse: 0 },
        n,
      );
      if (n % fireEvery === 0 && fires < opts.fires) {
        fires++;
        launch({ kind: 'fire', idempotencyKey: `fire-${fires}`, path: `/v1/triggers/${String(apiTrigger.id)}/fire`, body: { drill_fire: fires }, status: 0, inUse: 0 }, n + 1);
      }
      if (n % tickEvery === 0 && ticksAsked < opts.ticks) {
        ticksAsked++;
        tickChain = tickChain.then(tickOnce);
      }
      if (n === killAt) {
        log(`SIGKILL API 0 and worker 0 mid-load (${inFlight.size} requests in flight), restarting them`);
        killedApis.push(['mid-load', apis[0]!]);
        await Promise.all([apis[0]!.kill('SIGKILL'), workers[0]!.kill('SIGKILL')]);
        restarted = (async () => {
          // The restarted API dies once more, right after committing a request (by default one
          // it picks at random: a message or a fire, each with a chance of 1 in 3) and before
          // storing or sending its Idempotency-Key answer: the answer a crash cuts off.
          // Not waited for as "listening": a request of the load may kill it before that line.
          const dying = node(['api'], { PORT: String(ports[0]), FAILPOINTS: opts.cutOffFailpoint ?? 'idempotency.before_store:0.34' });
          everyProcess.push(dying);
          killedApis.push(['at its failpoint', dying]);
          apis[0] = dying;
          workers[0] = await startWorker();
          let exited = false;
          void dying.exited.then(() => (exited = true));
          // Until it dies at its failpoint (on one of these messages, or one of the load's): each
          // refused while it starts is sent again; each it answered is followed by a new one.
          const deadline = Date.now() + 120_000;
          let cutOff: Sent | undefined;
          for (let i = 1; !exited && Date.now() < deadline; ) {
            if (!cutOff || (cutOff.status >= 200 && cutOff.status < 300)) {
              const pmid = `drill-cut-off-${i++}`;
              cutOff = { kind: 'message', idempotencyKey: pmid, path: '/v1/messages', body: { channel: 'whatsapp', customer_id: `cust-${pmid}`, message: 'hello', provider_message_id: pmid }, status: 0, inUse: 0 };
              sent.push(cutOff);
            }
            await send(cutOff, 0);
            await sleep(200);
          }
          // Only its failpoint SIGKILLs this process. One that never reached it is stopped, and
          // the failpoint's check fails (rather than the drill waiting for it for good).
          if (!exited) log(`API 0 did not reach its failpoint in 120 s: stopped (${(await dying.kill('SIGTERM', 15_000)).signal})`);
          if ((await dying.exited).signal === 'SIGKILL') cutOffClaims++;
          const at = dying.lines.find((l) => l.startsWith('failpoint idempotency.before_store'));
          log(`API 0 died at its failpoint after a commit: ${at ?? 'no failpoint line'}; worker 0 restarted`);
          apis[0] = await startApi(0);
          log('API 0 restarted again');
        })().catch((err: unknown) => {
          restartFailure = String(err);
        });
      }
      await sleep(1000 / opts.rate);
    }
    await Promise.all(inFlight);
    await tickChain;
    await restarted;
    if (restartFailure) throw new Error(`restarting API 0 and worker 0 failed: ${restartFailure}`);
    figures.ticks_triggered = ticks;

    // Where each API kill landed: the requests it cut off, by what their Idempotency-Key row
    // shows committed (read before the resends change it).
    const org = (await db.query<{ organization_id: string }>('select organization_id from workflows where id = $1', [greeter.id])).rows[0]!.organization_id;
    const inFlightAtKill = sent.filter((s) => s.status === 0 && !s.refused && killedApis.some(([, p]) => p === s.to));
    const keyRows = new Map(
      (await db.query<{ key: string; committed: boolean }>(
        'select key, status_code is not null or recovery_point is not null as committed from idempotency_keys where organization_id = $1 and key = any($2)',
        [org, inFlightAtKill.map((s) => s.idempotencyKey)],
      )).rows.map((r) => [r.key, r.committed]),
    );
    const killedInFlight = inFlightAtKill.map((s) => {
      const committed = keyRows.get(s.idempotencyKey);
      const at: CutOffAt = committed === undefined ? 'not claimed' : committed ? 'after commit' : 'before commit';
      return { s, at, by: killedApis.find(([, p]) => p === s.to)![0] };
    });

    // A client resends what got no 2xx, with the same key, until it is answered.
    const unanswered = sent.filter((s) => s.status < 200 || s.status >= 300);
    log(`resending ${unanswered.length} requests without a 2xx (${unanswered.filter((s) => s.status === 0).length} without an answer)`);
    const resendDeadline = Date.now() + 60_000;
    for (let api = 0; unanswered.some((s) => s.status < 200 || s.status >= 300) && Date.now() < resendDeadline; api++) {
      const pending = unanswered.filter((s) => s.status < 200 || s.status >= 300);
      await Promise.all(pending.map((s, i) => send(s, api + i)));
      // Retry-After: 1 on 409 IDEMPOTENCY_KEY_IN_USE (a dead API's claim, until its lease lapses).
      if (pending.some((s) => s.status === 409)) await sleep(1000);
    }
    figures.resent = unanswered.length;
    figures.in_use_answers = sent.reduce((a, s) => a + s.inUse, 0);
    figures.claims_cut_off = cutOffClaims;
    check(cutOffClaims === 1, `an API died between a request's commit and storing its Idempotency-Key answer (${cutOffClaims} time)`);
    const count = (at: CutOffAt, by?: string) => killedInFlight.filter((c) => c.at === at && (by === undefined || c.by === by)).length;
    for (const [by] of killedApis) {
      log(`API kill ${by}: ${killedInFlight.filter((c) => c.by === by).length} requests in flight cut off, ${count('after commit', by)} after their work's commit, ${count('before commit', by)} before it (key claimed only), ${count('not claimed', by)} before claiming their key`);
    }
    const afterCommit = killedInFlight.filter((c) => c.at === 'after commit').map((c) => c.s);
    const killsAfterCommit = killedApis.filter(([by]) => count('after commit', by) > 0).map(([by]) => by);
    figures.api_kills = killedApis.length;
    figures.api_kills_after_commit = killsAfterCommit.length;
    figures.cut_off_after_commit = afterCommit.length;
    figures.cut_off_before_commit = count('before commit');
    figures.cut_off_not_claimed = count('not claimed');
    // The case the recovery points exist for: a kill between a request's commit and its
    // answer. That request's resend must be answered from what committed, not run again.
    check(
      killsAfterCommit.length > 0 && afterCommit.every((s) => s.status >= 200 && s.status < 300 && s.replayed),
      `API kills landed after commits: ${killsAfterCommit.length} of ${killedApis.length} (${killsAfterCommit.join(', ') || 'none'}), cutting off ${afterCommit.length} requests after their work's commit; ${afterCommit.filter((s) => s.replayed).length} of them answered on resend from what committed (Idempotent-Replayed: true), none run again`,
    );
    check(sent.every((s) => s.status >= 200 && s.status < 300), `every request accepted in the end, the cut-off claim's included (${sent.filter((s) => s.status >= 200 && s.status < 300).length}/${sent.length}; ${figures.in_use_answers} answers 409 IDEMPOTENCY_KEY_IN_USE while a dead API's claim held)`);

    // ---- Rate limit across both APIs ----
    const limitedFires = await Promise.all(
      Array.from({ length: opts.rateLimit * 2 }, (_, i) =>
        fetch(`${base(i)}/v1/triggers/${String(limited.id)}/fire`, { method: 'POST', headers, body: JSON.stringify({ limited: i }) }).then((r) => r.status),
      ),
    );
    const accepted = limitedFires.filter((s) => s === 201).length;
    const refused = limitedFires.filter((s) => s === 429).length;
    // A loaded machine may answer a few 503s before the limiter is reached (authentication
    // waits on a busy pool): those take no slot, so the limit still admits exactly `limit`.
    const busy = limitedFires.filter((s) => s === 503).length;
    check(
      accepted === opts.rateLimit && refused + busy === opts.rateLimit,
      `rate limit exact across both APIs: ${accepted} of ${limitedFires.length} fires accepted, ${refused} refused 429, ${busy} answered 503 (limit ${opts.rateLimit}/h)`,
    );

    // ---- Drain ----
    // No more ticks (the cron's minute boundaries) from here, so every run can be counted.
    // The Temporal schedule, not the trigger: a run already started still fires an active trigger.
    await rpc(() => scheduleHandle.pause('replicated drill: counting the ticks'));
    const workflowIds = (query: string) =>
      rpc(async () => {
        const ids: string[] = [];
        for await (const wf of tclient.workflow.list({ query })) ids.push(wf.workflowId);
        return ids;
      });
    const scheduledRuns = `WorkflowType = '${SCHEDULED_TRIGGER_WORKFLOW_TYPE}' AND WfaTriggerId = '${String(scheduled.id)}'`;
    // The pause is a request the schedule takes in its own time: until it shows as paused, a
    // minute boundary may still start a run. Visibility lags: a run started just before may
    // not be listed yet, or not yet as running. So the schedule counts its own runs, and each
    // run's own state (describe, not the visibility index) says when it is done.
    await until('the schedule to show as paused', async () => (await rpc(() => scheduleHandle.describe())).state.paused, opts.drainTimeoutMs);
    const taken = (await rpc(() => scheduleHandle.describe())).info.numActionsTaken;
    await until(`the schedule's ${taken} runs to be listed`, async () => (await workflowIds(scheduledRuns)).length >= taken, opts.drainTimeoutMs);
    const runs = await workflowIds(scheduledRuns);
    const runStates = () => rpc(() => Promise.all(runs.map((run) => tclient.workflow.getHandle(run).describe())));
    await until('every schedule run to finish', async () => (await runStates()).every((d) => d.status.name !== 'RUNNING'), opts.drainTimeoutMs);
    const running = async () => (await db.query("select id, temporal_started_at from executions where organization_id = $1 and status = 'running'", [org])).rows;
    const drainProgress = async () => {
      const rows = await running();
      return `${rows.length} running, ${rows.filter((r) => r.temporal_started_at === null).length} of them not started on Temporal yet`;
    };
    await until('every execution to finish', async () => (await running()).length === 0, opts.drainTimeoutMs, drainProgress, log).catch(async (err: unknown) => {
      log(`still running: ${JSON.stringify((await running()).slice(0, 5))}`);
      for (const [i, w] of workers.entries()) log(`worker ${i} tail:\n${w.lines.slice(-20).join('\n')}`);
      throw err;
    });

    // ---- Messages: exactly once ----
    const messages = sent.filter((s) => s.kind === 'message');
    const pmids = messages.map((s) => String(s.body.provider_message_id));
    const inbound = (await db.query("select provider_message_id, count(*)::int as n from messages where organization_id = $1 and direction = 'inbound' and provider_message_id = any($2) group by 1", [org, pmids])).rows;
    check(inbound.length === pmids.length && inbound.every((r) => r.n === 1), `one inbound message per provider message id (${inbound.length}/${pmids.length})`);
    const perMessage = (
      await db.query(
        `select m.provider_message_id, count(e.id)::int as n, count(*) filter (where e.status = 'success')::int as ok,
                coalesce(sum((select count(*) from execution_steps s where s.execution_id = e.id)), 0)::int as steps,
                coalesce(sum((select count(*) from messages o where o.execution_id = e.id and o.direction = 'outbound')), 0)::int as replies
           from messages m left join executions e on e.message_id = m.id
          where m.organization_id = $1 and m.direction = 'inbound' and m.provider_message_id = any($2) group by 1`,
        [org, pmids],
      )
    ).rows as Array<{ n: number; ok: number; steps: number; replies: number }>;
    const once = perMessage.filter((r) => r.n === 1 && r.ok === 1 && r.steps === 2 && r.replies === 2).length;
    check(once === pmids.length, `every accepted message handled exactly once: one execution, success, 2 steps, 2 replies (${once}/${pmids.length})`);
    figures.messages = pmids.length;

    // ---- Fires ----
    const fireMarks = sent.filter((s) => s.kind === 'fire').map((s) => Number(s.body.drill_fire));
    const firings = (
      await db.query(
        `select (te.input->>'drill_fire')::int as mark, count(*)::int as n, count(*) filter (where e.status = 'success')::int as ok
           from trigger_executions te left join executions e on e.id = te.execution_id
          where te.trigger_id = $1 group by 1`,
        [apiTrigger.id],
      )
    ).rows as Array<{ mark: number; n: number; ok: number }>;
    const recorded = firings.filter((r) => fireMarks.includes(r.mark) && r.ok === r.n).length;
    figures.fires = fireMarks.length;
    figures.fire_duplicates = firings.reduce((a, r) => a + r.n - 1, 0);
    check(recorded === fireMarks.length && firings.length === fireMarks.length, `every accepted fire recorded and its execution a success (${recorded}/${fireMarks.length})`);
    // Nothing doubled: a message or a fire recorded more than once (a resend whose first try
    // committed before its API died must be answered from that try, never run again).
    figures.doubled = figures.fire_duplicates + inbound.reduce((a, r) => a + r.n - 1, 0) + perMessage.reduce((a, r) => a + Math.max(0, r.n - 1), 0);
    check(figures.doubled === 0, `doubled ${figures.doubled}: no message or fire recorded or executed twice (${pmids.length} messages, ${fireMarks.length} fires)`);

    // ---- Schedule ticks ----
    const tickRows = (await db.query<{ source_key: string | null; ok: boolean }>("select te.source_key, e.status = 'success' as ok from trigger_executions te left join executions e on e.id = te.execution_id where te.trigger_id = $1", [scheduled.id])).rows;
    const keys = tickRows.map((r) => r.source_key ?? '');
    // A scheduled run's id is its time to the second: two ticks taken in one second (a tick
    // and the cron's minute) start the same id twice, the second run after the first closed,
    // and that second run finds the tick's firing recorded. One firing per id is the rule.
    const tickIds = [...new Set(runs)];
    figures.schedule_runs = runs.length;
    // What became of a tick without a firing (the activity's outcome says why), in the check's own line.
    const unfired = await Promise.all(
      tickIds
        .filter((r) => !keys.includes(r))
        .map(async (r) => `; ${r} recorded no firing: ${await rpc(() => tclient.workflow.getHandle(r).result()).then((x) => JSON.stringify(x), (err: unknown) => String(err))}`),
    );
    check(
      tickIds.length > 0 && keys.length === tickIds.length && new Set(keys).size === keys.length && tickIds.every((r) => keys.includes(r)) && tickRows.every((r) => r.ok),
      `each schedule tick fired once: ${runs.length} scheduled runs (${tickIds.length} distinct ids) of ${taken} the schedule took (${ticks} triggered, the rest the cron's), ${keys.length} firings, ${new Set(keys).size} distinct, ${tickRows.filter((r) => r.ok).length} successful${unfired.join('')}`,
    );

    // ---- Starts: no execution started twice ----
    const executions = (await db.query<{ id: string; stamped: boolean; started_events: number }>(
      `select e.id, e.temporal_started_at is not null as stamped,
              (select count(*) from events v where v.organization_id = e.organization_id and v.type = 'workflow.started' and v.data->>'execution_id' = e.id)::int as started_events
         from executions e where e.organization_id = $1`,
      [org],
    )).rows;
    const runsPerExecution = new Map<string, number>();
    for (const id of await workflowIds(`WorkflowType = '${EXECUTION_WORKFLOW_TYPE}' AND TaskQueue = '${env.TEMPORAL_TASK_QUEUE}'`)) {
      runsPerExecution.set(id, (runsPerExecution.get(id) ?? 0) + 1);
    }
    const ours = executions.filter((e) => runsPerExecution.has(e.id));
    const twice = [...runsPerExecution.values()].filter((n) => n > 1).length;
    figures.executions = executions.length;
    check(ours.length === executions.length && twice === 0, `no execution started twice: ${executions.length} executions, ${ours.length} with a Temporal run, ${twice} with more than one`);
    check(executions.every((e) => e.started_events === 1), `one workflow.started event per execution (${executions.filter((e) => e.started_events === 1).length}/${executions.length})`);
    check(executions.every((e) => e.stamped), `every finished execution has temporal_started_at (${executions.filter((e) => e.stamped).length}/${executions.length})`);
    const reconciled = everyProcess
      .flatMap((p) => p.lines)
      .map((l) => /"started":(\d+).*reconciler started executions/.exec(l)?.[1])
      .reduce((a, n) => a + Number(n ?? 0), 0);
    const cutOff = everyProcess.flatMap((p) => p.lines).filter((l) => l.includes('Temporal call cut off at its timeout')).length;
    figures.reconciler_starts = reconciled;
    figures.starts_cut_off = cutOff;
    log(`starts left to the reconcilers: ${reconciled} (${cutOff} API starts cut off at their timeout, logged)`);

    // ---- Webhooks: every event to every subscribed webhook ----
    const events = (await db.query<{ id: string }>('select id from events where organization_id = $1 and type = any($2)', [org, WEBHOOK_EVENTS])).rows.map((r) => r.id);
    const deliveredTo = (hook: string) => receiver.requestsTo(hook).map((r) => r.headers['webhook-id'] ?? '');
    await until('every event delivered to both webhooks', async () => hooks.every((h) => new Set(deliveredTo(h)).size >= events.length), opts.drainTimeoutMs).catch(() => undefined);
    figures.events = events.length;
    for (const hook of hooks) {
      const got = deliveredTo(hook);
      const distinct = new Set(got);
      const missing = events.filter((e) => !distinct.has(e)).length;
      figures[`duplicates${hook.replace('/hook-', '_')}`] = got.length - distinct.size;
      check(missing === 0, `webhook ${hook}: ${events.length - missing}/${events.length} events delivered, ${got.length - distinct.size} duplicate deliveries`);
    }
  } finally {
    await Promise.all(everyProcess.map((p) => p.kill('SIGTERM', 15_000).catch(() => undefined)));
    await db.end().catch(() => undefined);
    await temporal?.close().catch(() => undefined);
    await receiver.close();
  }
  return { checks, figures };
}
