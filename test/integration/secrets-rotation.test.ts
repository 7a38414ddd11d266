/**
 * The secrets key's runbook (docs/deploy.md, "Rotating the secrets key") end to end, on two
 * API processes sharing one database: add the new key second, roll; move it first, roll;
 * `secrets rotate`; remove the old key, roll. Between and during the rolls one replica runs
 * the previous keyring while the other runs the next, and both keep serving: webhooks
 * created on one are read and test-delivered (signed HTTPS) on the other, channel connections
 * created on one are tested on the other. Values sealed before the keyring (`v1:`, by the
 * code path of that time) are among them. Also: a process that needs the key and has none
 * refuses to start, naming the variable.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runCli } from '../../scripts/lib/cli';
import { createTestApp, type TestApp } from '../helpers/app';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver';
import { freePort, spawnService, type SpawnedProcess } from '../helpers/process';
import { hexSignature } from '../helpers/webhooks';
import { generateSecretsKey, SecretBox, parseSecretsKey } from '../../src/secrets';

// Eight API starts (each replica four times) on a loaded 2-core machine: about 200 s there.
jest.setTimeout(480_000);

const OLD = process.env.SECRETS_ENCRYPTION_KEY!;
const NEW = generateSecretsKey();
/** The keyrings of the runbook's steps, as the variables a replica gets. */
const KEYRINGS = {
  before: { SECRETS_ENCRYPTION_KEY: OLD, SECRETS_ENCRYPTION_KEYS: undefined },
  added: { SECRETS_ENCRYPTION_KEY: undefined, SECRETS_ENCRYPTION_KEYS: `default:${OLD},k2:${NEW}` },
  moved: { SECRETS_ENCRYPTION_KEY: undefined, SECRETS_ENCRYPTION_KEYS: `k2:${NEW},default:${OLD}` },
  removed: { SECRETS_ENCRYPTION_KEY: undefined, SECRETS_ENCRYPTION_KEYS: `k2:${NEW}` },
};
type Keyring = (typeof KEYRINGS)[keyof typeof KEYRINGS];

let t: TestApp;
let receiver: HttpsReceiver;
/** A channel provider that accepts `Authorization: Bearer <secret>` for the secret its path names. */
let provider: Server;
let providerUrl: string;
let auth: Record<string, string>;

/** Replica processes alive, stopped at the end whatever happened. */
const running = new Set<SpawnedProcess>();

interface Replica {
  name: string;
  base: string;
  proc: SpawnedProcess;
}

async function startReplica(name: string, keyring: Keyring): Promise<Replica> {
  const port = await freePort();
  const proc = spawnService('api', t, {
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_EXTRA_CA_FILE: receiver.caFile,
    ...keyring,
  });
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  await proc.waitForLine(/API listening/, 120_000);
  return { name, base: `http://127.0.0.1:${port}`, proc };
}

async function roll(replica: Replica, keyring: Keyring): Promise<Replica> {
  await replica.proc.kill('SIGTERM');
  return startReplica(replica.name, keyring);
}

async function call(r: Replica, method: string, path: string, body?: unknown) {
  const res = await fetch(`${r.base}${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as { data: Record<string, any> } };
}

interface Hook {
  id: string;
  secret: string;
  path: string;
}
interface Channel {
  id: string;
  secret: string;
}
const hooks: Hook[] = [];
const channels: Channel[] = [];
let n = 0;

async function createHook(on: Replica): Promise<Hook> {
  const path = `/hook-${++n}`;
  const secret = `whsec-runbook-secret-${n}-${'x'.repeat(16)}`;
  const res = await call(on, 'POST', '/v1/webhooks', { url: receiver.url(path), events: ['workflow.completed'], secret });
  expect(res.status).toBe(201);
  const hook = { id: res.body.data.id as string, secret, path };
  hooks.push(hook);
  return hook;
}

async function createChannel(on: Replica): Promise<Channel> {
  const secret = `channel-secret-${++n}`;
  const res = await call(on, 'POST', '/v1/channels', { type: 'http', name: `bridge ${n}`, config: { url: `${providerUrl}/${secret}`, channel: 'voice', secret } });
  expect(res.status).toBe(201);
  const channel = { id: res.body.data.id as string, secret };
  channels.push(channel);
  return channel;
}

/** The secret reads back on `on`, and a test delivery from `on` is signed with it (and with `previous` while it overlaps). */
async function expectHookServed(on: Replica, hook: Hook, previous?: string) {
  const read = await call(on, 'GET', `/v1/webhooks/${hook.id}`);
  expect({ replica: on.name, status: read.status, secret: read.body.data.secret }).toEqual({ replica: on.name, status: 200, secret: hook.secret });
  const before = receiver.requestsTo(hook.path).length;
  const tested = await call(on, 'POST', `/v1/webhooks/${hook.id}/test`, { event_type: 'workflow.completed' });
  expect({ replica: on.name, status: tested.status, outcome: tested.body.data.status }).toEqual({ replica: on.name, status: 200, outcome: 'success' });
  const req = (await receiver.waitFor(hook.path, before + 1))[before]!;
  expect(req.headers['x-service-signature']).toBe(hexSignature(hook.secret, req.body));
  if (previous) expect(req.headers['x-service-signature-previous']).toBe(hexSignature(previous, req.body));
}

async function expectChannelServed(on: Replica, channel: Channel) {
  const tested = await call(on, 'POST', `/v1/channels/${channel.id}/test`);
  expect({ replica: on.name, status: tested.status, ok: tested.body.data.ok }).toEqual({ replica: on.name, status: 200, ok: true });
}

/** Everything created so far still serves on both replicas. */
async function expectAllServed(a: Replica, b: Replica) {
  for (const hook of hooks) for (const r of [a, b]) await expectHookServed(r, hook);
  for (const channel of channels) for (const r of [a, b]) await expectChannelServed(r, channel);
}

const sealedPrefixes = async () =>
  (
    await t.query<{ prefix: string }>(
      `select left(secret, 6) as prefix from webhooks
       union all select left(previous_secret, 6) from webhooks where previous_secret is not null
       union all select left(configuration->>'secret', 6) from triggers where configuration ? 'secret'
       union all select left(s.value, 6) from channel_connections c, jsonb_each_text(c.secrets) s`,
    )
  ).map((r) => r.prefix);

async function rotate(keyring: Keyring, extra: string[] = []) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['secrets', 'rotate', '--json', ...extra], {
    env: { ...process.env, DATABASE_URL: t.databaseUrl, ...keyring },
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    readStdin: async () => '',
  });
  return { code, report: JSON.parse(stdout), stderr };
}

beforeAll(async () => {
  t = await createTestApp();
  auth = { Authorization: `Bearer ${(await t.createKey('admin')).key}` };
  receiver = await startHttpsReceiver();
  provider = createServer((req, res) => {
    const expected = decodeURIComponent((req.url ?? '').slice(1));
    res.writeHead(req.headers.authorization === `Bearer ${expected}` ? 200 : 401).end();
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await Promise.all([...running].map((p) => p.kill('SIGTERM')));
  await receiver?.close();
  await new Promise((resolve) => provider?.close(resolve));
  await t?.close();
});

test('the API and the worker refuse to start without a secrets key, naming the variable', async () => {
  for (const role of ['api', 'worker'] as const) {
    const proc = spawnService(role, t, { SECRETS_ENCRYPTION_KEY: undefined, SECRETS_ENCRYPTION_KEYS: undefined });
    expect((await proc.exited).code).toBe(1);
    expect(proc.lines.join('\n')).toMatch(/SECRETS_ENCRYPTION_KEYS: required \(or SECRETS_ENCRYPTION_KEY/);
  }
});

test('the rotation runbook, step by step, with a replica on the previous keyring at each roll', async () => {
  // Before: both replicas on SECRETS_ENCRYPTION_KEY. Some values were sealed before the
  // keyring existed: written here with that code path (`v1:`, no key id, no associated data).
  let a = await startReplica('A', KEYRINGS.before);
  let b = await startReplica('B', KEYRINGS.before);
  const legacyHook = await createHook(a);
  const legacyChannel = await createChannel(b);
  const wf = await call(a, 'POST', '/v1/workflows', { name: 'Notify', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Ping' }] } });
  expect((await call(a, 'POST', `/v1/workflows/${wf.body.data.id}/activate`)).status).toBe(200);
  const trigger = await call(a, 'POST', '/v1/triggers', { workflow_id: wf.body.data.id, name: 'Order hook', type: 'webhook', configuration: { secret: 'trigger-secret-of-enough-length' } });
  expect(trigger.status).toBe(201);
  const v1 = new SecretBox(parseSecretsKey(OLD)!);
  await t.query('update webhooks set secret = ? where id = ?', [v1.seal(legacyHook.secret), legacyHook.id]);
  await t.query(`update triggers set configuration = jsonb_set(configuration, '{secret}', to_jsonb(?::text)) where id = ?`, [v1.seal('trigger-secret-of-enough-length'), trigger.body.data.id]);
  await t.query('update channel_connections set secrets = ?::jsonb where id = ?', [JSON.stringify({ secret: v1.seal(legacyChannel.secret), verify_token: v1.seal('legacy-verify') }), legacyChannel.id]);
  await expectAllServed(a, b);

  // 1. Add the new key in second position and roll: A has it, B not yet. A still seals with
  // the old key, so B opens everything A writes.
  a = await roll(a, KEYRINGS.added);
  await expectHookServed(b, await createHook(a));
  await expectChannelServed(a, await createChannel(b));
  await expectAllServed(a, b);
  b = await roll(b, KEYRINGS.added);

  // 2. Move the new key first and roll: A seals with k2 while B, on the previous keyring,
  // still seals with the old key; each opens what the other writes.
  a = await roll(a, KEYRINGS.moved);
  const sealedByA = await createHook(a);
  expect((await t.query<{ secret: string }>('select secret from webhooks where id = ?', [sealedByA.id]))[0]!.secret).toMatch(/^v2:k2:/);
  await expectHookServed(b, sealedByA);
  const sealedByB = await createHook(b);
  expect((await t.query<{ secret: string }>('select secret from webhooks where id = ?', [sealedByB.id]))[0]!.secret).toMatch(/^v2:default:/);
  await expectHookServed(a, sealedByB);
  await expectChannelServed(b, await createChannel(a));
  await expectAllServed(a, b);
  b = await roll(b, KEYRINGS.moved);

  // 3. Rotate, in batches of one, while A rotates webhook secrets (each answer is the new
  // secret; the replaced one signs beside it): no write is lost, and nothing is left.
  expect((await sealedPrefixes()).filter((p) => !p.startsWith('v2:k2:')).length).toBeGreaterThan(5);
  const rotating = rotate(KEYRINGS.moved, ['--batch-size', '1']);
  const rotatedSecrets = await Promise.all(
    hooks.slice(0, 3).map(async (hook) => {
      const res = await call(a, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`, {});
      expect(res.status).toBe(200);
      const previous = hook.secret;
      hook.secret = res.body.data.secret as string;
      return { hook, previous };
    }),
  );
  const rotated = await rotating;
  expect(rotated.code).toBe(0);
  expect(rotated.report).toMatchObject({ sealing_key_id: 'k2', failed: 0, remaining: 0 });
  // Rows: at least the webhook sealed by B, two channels and the trigger (A may have rotated the first three webhooks itself).
  expect(rotated.report.resealed).toBeGreaterThanOrEqual(4);
  expect(rotated.stderr).toMatch(/re-sealed so far \(\d+\/s\)/);
  expect(new Set((await sealedPrefixes()).map((p) => p.slice(0, 6)))).toEqual(new Set(['v2:k2:']));
  for (const { hook, previous } of rotatedSecrets) await expectHookServed(b, hook, previous);
  // A rerun finds nothing to do.
  expect((await rotate(KEYRINGS.moved)).report).toMatchObject({ resealed: 0, remaining: 0 });

  // 4. Remove the old key and roll: B is still on the previous keyring while A is not.
  a = await roll(a, KEYRINGS.removed);
  await expectAllServed(a, b);
  b = await roll(b, KEYRINGS.removed);
  await expectAllServed(a, b);
  const readTrigger = await call(b, 'GET', `/v1/triggers/${trigger.body.data.id}`);
  expect(readTrigger.body.data.configuration.secret).toBe('trigger-secret-of-enough-length');
  const verifyToken = await t.query<{ n: string }>("select count(*) as n from channel_connections where secrets->>'verify_token' like 'v2:k2:%'");
  expect(Number(verifyToken[0]!.n)).toBe(channels.length);
});
