/**
 * `npm run bench -- channels [--n 200] [--concurrency 10] [--rounds 3] [--warmup 50] [--cpu-prof PREFIX]`: a
 * WhatsApp hook POST (signed, Meta's payload) → the first outbound Graph call, against
 * `POST /v1/messages` → the same call through the development default adapter
 * (CHANNEL_PROVIDER_URL), for the same one-message workflow. One process (API, worker, load
 * and a local fake Graph / provider server), as the tests run; `concurrency` messages in
 * flight on each side, interleaved rounds (ours, baseline, ...) after `warmup` uncounted
 * messages each.
 *
 * Prints per round the p50 / p99 of message → first outbound call and messages/s, and the CPU
 * ms per message of this process (API, worker, load), the database's backends and the
 * Temporal server (when the bench started it), until each side's conversations closed;
 * then the cost of what only the hook does before the shared path (HMAC-SHA256 of the raw
 * body and reading Meta's payload), timed in a loop on the same bodies, as a share of the
 * hook's p50. `--cpu-prof PREFIX` CPU-profiles this thread during the first round of each
 * side (PREFIX.hook.cpuprofile, PREFIX.api.cpuprofile).
 * Last line: `ratio=<median baseline p50 / median hook p50>` (≥ 0.9 wanted: the hook at most
 * ~11 % slower than the API path it reuses).
 */
import { createHmac, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApiServices, createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { readWhatsAppHook } from '../src/modules/channels/providers/meta/meta-hook-payloads';
import { closeServices, createServices } from '../src/services';
import { generateSecretsKey } from '../src/secrets';
import { createActivities } from '../temporal/activities';
import { createWorker, runWorker } from '../temporal/worker';
import { Client } from 'pg';
import { benchDatabase, benchTemporal, cpuProfile, log, machineLine, optionArg, percentile, pool, positiveIntArg as arg, processCpuMs, temporalServerPid } from './lib';

const PHONE_ID = '106540352242922';
const APP_SECRET = 'bench-app-secret';

/** A local server standing for both providers: it resolves the waiter of each recipient on its first call. */
async function startProvider() {
  const waiters = new Map<string, () => void>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw || '{}') as { to?: string };
      if (body.to) {
        waiters.get(body.to)?.();
        waiters.delete(body.to);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ messages: [{ id: `wamid.${randomBytes(8).toString('hex')}` }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    firstCall: (to: string) => new Promise<void>((resolve) => waiters.set(to, resolve)),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const hookBody = (waId: string) =>
  JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [{ id: '1', changes: [{ field: 'messages', value: { messaging_product: 'whatsapp', metadata: { phone_number_id: PHONE_ID }, contacts: [{ profile: { name: 'Bench' }, wa_id: waId }], messages: [{ from: waId, id: `wamid.${randomBytes(10).toString('hex')}`, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: 'hello' } }] } }] }],
  });

export async function run(args: string[]): Promise<void> {
  const n = arg(args, 'n', 200);
  const concurrency = arg(args, 'concurrency', 10);
  const rounds = arg(args, 'rounds', 3);
  const warmup = arg(args, 'warmup', 50);
  const profile = optionArg(args, 'cpu-prof');
  log(machineLine());
  const [db, temporal, provider] = await Promise.all([benchDatabase(), benchTemporal(), startProvider()]);
  const suffix = randomBytes(4).toString('hex');
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '20',
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-channels-${suffix}`,
    REDIS_KEY_PREFIX: `wfa-bench:${suffix}:`,
    LOG_LEVEL: 'silent',
    SECRETS_ENCRYPTION_KEY: generateSecretsKey(),
    META_GRAPH_API_URL: `${provider.url}/v21.0`,
    CHANNEL_PROVIDER_URL: `${provider.url}/send`,
    RATE_LIMIT_CREDENTIAL_PER_HOUR: '1000000',
    RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '1000000',
    RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '1000000',
  });
  const orm = await createOrm(entities, db.url, 20);
  await migrate(orm);
  const services = await createServices(config, { orm });
  const { app } = createApp(await createApiServices(services));
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const worker = runWorker(await createWorker({ address: temporal.address, namespace: 'default', taskQueue: config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services }) }));

  // Two organizations with the same workflow: one with a WhatsApp connection, one without (the default adapter).
  const keys = new ApiKeyService(orm.em.fork());
  const setUp = async (name: string) => {
    const org = await keys.ensureOrganization(`${name}-${suffix}`);
    const { key } = await keys.create(org.id, 'bench', 'admin');
    const call = async (path: string, body: object) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { data: { id: string } };
    };
    const wf = await call('/v1/workflows', { name: 'Bench', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'm', type: 'message', content: 'Hi' }] } });
    await call(`/v1/workflows/${wf.data.id}/activate`, {});
    return { key, call };
  };
  const hooked = await setUp('hook');
  const channel = (await hooked.call('/v1/channels', { type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'tok', app_secret: APP_SECRET } })).data.id;
  const plain = await setUp('api');

  let seq = 0;
  const viaHook = async () => {
    const waId = `1555${String(seq++).padStart(8, '0')}`;
    const raw = hookBody(waId);
    const sent = provider.firstCall(waId);
    const t0 = performance.now();
    const res = await fetch(`${base}/hooks/channels/${channel}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', APP_SECRET).update(raw).digest('hex')}` },
      body: raw,
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`hook: ${res.status}`);
    await sent;
    return performance.now() - t0;
  };
  const viaApi = async () => {
    const waId = `1666${String(seq++).padStart(8, '0')}`;
    const sent = provider.firstCall(waId);
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${plain.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'whatsapp', customer_id: waId, message: 'hello', customer: { name: 'Bench' } }),
    });
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`messages: ${res.status}`);
    await sent;
    return performance.now() - t0;
  };
  // CPU per message: this process, the database's backends, the Temporal server (when it is the bench's own).
  const temporalPid = temporalServerPid(temporal.address);
  const pg = new Client({ connectionString: db.url });
  await pg.connect();
  const cpuNow = async () => {
    const pids = (await pg.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.map((r) => r.pid);
    return { self: processCpuMs('self'), temporal: temporalPid ? processCpuMs(temporalPid) : 0, pg: new Map(pids.map((pid) => [pid, processCpuMs(pid)])) };
  };
  /** Until the conversations of the side closed (none running): the worker's share of each message is in. */
  const settled = async () => {
    while ((await pg.query("select 1 from executions where status = 'running' limit 1")).rowCount) await new Promise((r) => setTimeout(r, 20));
  };
  const measure = async (count: number, one: () => Promise<number>, file?: string) => {
    const times: number[] = [];
    const before = await cpuNow();
    const t0 = performance.now();
    await cpuProfile(file, () => pool(count, concurrency, async () => void times.push(await one())));
    const perSecond = (count / (performance.now() - t0)) * 1000;
    await settled();
    const after = await cpuNow();
    const pgMs = [...after.pg].reduce((a, [pid, ms]) => a + ms - (before.pg.get(pid) ?? 0), 0);
    const cpu = { self: (after.self - before.self) / count, pg: pgMs / count, temporal: (after.temporal - before.temporal) / count };
    return { p50: percentile(times, 50), p99: percentile(times, 99), perSecond, cpu };
  };
  const cpuLine = (c: { self: number; pg: number; temporal: number }) =>
    `CPU ms/message: bench process ${c.self.toFixed(1)}, PostgreSQL ${c.pg.toFixed(1)}${temporalPid ? `, Temporal ${c.temporal.toFixed(1)}` : ''}, total ${(c.self + c.pg + c.temporal).toFixed(1)}`;

  await measure(warmup, viaHook);
  await measure(warmup, viaApi);
  const hookP50: number[] = [];
  const apiP50: number[] = [];
  for (let r = 1; r <= rounds; r++) {
    const h = await measure(n, viaHook, r === 1 && profile ? `${profile}.hook.cpuprofile` : undefined);
    const a = await measure(n, viaApi, r === 1 && profile ? `${profile}.api.cpuprofile` : undefined);
    hookP50.push(h.p50);
    apiP50.push(a.p50);
    log(`round ${r}: hook → first Graph call p50 ${h.p50.toFixed(1)} ms p99 ${h.p99.toFixed(1)} ms ${h.perSecond.toFixed(0)}/s | POST /v1/messages → first call p50 ${a.p50.toFixed(1)} ms p99 ${a.p99.toFixed(1)} ms ${a.perSecond.toFixed(0)}/s`);
    log(`  hook ${cpuLine(h.cpu)} | API ${cpuLine(a.cpu)}`);
  }

  // What only the hook does before the shared path: the signature and reading the payload.
  const bodies = Array.from({ length: 1000 }, (_, i) => hookBody(`1777${String(i).padStart(8, '0')}`));
  const t0 = performance.now();
  for (const raw of bodies) {
    createHmac('sha256', APP_SECRET).update(raw).digest('hex');
    readWhatsAppHook((JSON.parse(raw) as { entry: Array<Record<string, unknown>> }).entry);
  }
  const perHookMs = (performance.now() - t0) / bodies.length;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  log(`signature + parsing: ${(perHookMs * 1000).toFixed(1)} µs a hook = ${((perHookMs / median(hookP50)) * 100).toFixed(4)} % of the hook's median p50`);

  await pg.end();
  await worker.shutdown();
  server.close();
  await closeServices(services);
  await provider.close();
  await db.drop();
  await temporal.stop();
  log(`ratio=${(median(apiP50) / median(hookP50)).toFixed(3)}`);
}
