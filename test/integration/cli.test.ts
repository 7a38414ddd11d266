/**
 * The operator CLI (scripts/cli.ts → scripts/lib/cli.ts): each command's output, JSON and
 * exit code, and the rows it leaves. Called in-process with its arguments and environment,
 * as the shell would; one run goes through `tsx scripts/cli.ts` to check the entry's exit code.
 * `secrets rotate` runs in test/integration/secrets-rotation.test.ts.
 */
import path from 'node:path';
import { runCli } from '../../scripts/lib/cli';
import { bearer, createTestApp, type TestApp, uniqueSuffix } from '../helpers/app';
import { spawnProcess } from '../helpers/process';
import { releaseTestDatabase } from '../helpers/test-databases';
import { ensureDatabase } from '../../src/db/orm';
import { Client } from 'pg';

const root = path.resolve(__dirname, '..', '..');
let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

async function cli(argv: string[], env: NodeJS.ProcessEnv = {}, stdin = '') {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'silent', ...env },
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    readStdin: async () => stdin,
  });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

test('--help lists every command; a command takes --help; usage errors exit 2 with the help', async () => {
  const help = await cli(['--help']);
  expect(help.code).toBe(0);
  for (const command of ['api-keys create', 'api-keys list', 'api-keys revoke', 'users create', 'organizations list', 'secrets rotate', 'migrate']) {
    expect(help.stdout).toContain(command);
  }
  const revokeHelp = await cli(['api-keys', 'revoke', '--help']);
  expect(revokeHelp.code).toBe(0);
  expect(revokeHelp.stdout).toMatch(/^usage: npm run cli -- api-keys revoke <key id>/);

  expect((await cli([])).code).toBe(2);
  const unknown = await cli(['keys', 'list']);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toMatch(/unknown command "keys list"/);
  const noId = await cli(['api-keys', 'revoke']);
  expect(noId.code).toBe(2);
  expect(noId.stderr).toMatch(/expected <key id>/);
  const badOption = await cli(['organizations', 'list', '--colour']);
  expect(badOption.code).toBe(2);
  expect(badOption.stderr).toMatch(/--colour/);
  const badBatch = await cli(['secrets', 'rotate', '--batch-size', '0']);
  expect(badBatch.code).toBe(2);
  expect(badBatch.stderr).toMatch(/--batch-size/);
});

test('api-keys create, list and revoke: JSON on request, the key never listed, a revoked key refused by the API', async () => {
  const org = `cli-${uniqueSuffix()}`;
  const created = await cli(['api-keys', 'create', '--org', org, '--name', 'ops', '--permission', 'admin', '--json']);
  expect(created.code).toBe(0);
  const key = created.json();
  expect(key).toMatchObject({ organization: org, name: 'ops', permission: 'admin' });
  expect(key.key).toMatch(/^wfa_[0-9A-Za-z]{43}$/);
  const second = (await cli(['api-keys', 'create', '--org', org, '--name', 'reader', '--permission', 'read', '--json'])).json();

  const listed = await cli(['api-keys', 'list', '--org', org, '--json']);
  expect(listed.code).toBe(0);
  expect(listed.json().data.map((k: { id: string }) => k.id)).toEqual([key.id, second.id]);
  expect(listed.json().data[0]).toMatchObject({ organization_id: key.organization_id, organization: org, name: 'ops', permission: 'admin', last_used_at: null });
  expect(listed.stdout).not.toContain(key.key);
  const text = await cli(['api-keys', 'list', '--org', org]);
  expect(text.stdout.split('\n')[0]).toMatch(/^ID\s+ORGANIZATION\s+NAME\s+PERMISSION\s+KEY/);
  expect(text.stdout).toContain(`${key.key.slice(0, 8)}…${key.key.slice(-4)}`);
  expect(text.stdout).not.toContain(key.key);

  expect((await t.request.get('/v1/me').set(bearer(second.key))).status).toBe(200);
  const revoked = await cli(['api-keys', 'revoke', key.id, '--json']);
  expect(revoked.code).toBe(0);
  expect(revoked.json()).toMatchObject({ id: key.id, organization_id: key.organization_id });
  expect((await t.request.get('/v1/me').set(bearer(key.key))).status).toBe(401);
  expect((await t.query<{ revoked_at: Date | null }>('select revoked_at from api_keys where id = ?', [key.id]))[0]!.revoked_at).not.toBeNull();
  expect((await cli(['api-keys', 'list', '--org', org, '--json'])).json().data.map((k: { id: string }) => k.id)).toEqual([second.id]);

  const again = await cli(['api-keys', 'revoke', key.id]);
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(new RegExp(`no API key ${key.id}`));
  expect((await cli(['api-keys', 'revoke', 'key_doesnotexist'])).code).toBe(1);
});

test('organizations list: text and JSON, with each organization\'s count of live keys', async () => {
  const org = `cli-orgs-${uniqueSuffix()}`;
  await cli(['api-keys', 'create', '--org', org, '--name', 'a', '--permission', 'read']);
  const listed = await cli(['organizations', 'list', '--json']);
  expect(listed.code).toBe(0);
  const row = listed.json().data.find((o: { name: string }) => o.name === org);
  const [db] = await t.query<{ id: string }>('select id from organizations where name = ?', [org]);
  expect(row).toMatchObject({ id: db!.id, name: org, api_keys: 1 });
  const text = await cli(['organizations', 'list']);
  expect(text.stdout).toMatch(new RegExp(`${db!.id}\\s+${org}\\s+\\S+\\s+1\\n`));
});

test('no command migrates: on a database behind, each refuses and names `migrate`, which migrates it under the lock', async () => {
  const bare = `postgresql://postgres@127.0.0.1:5432/wfa_test_${uniqueSuffix()}_bare`.toLowerCase();
  await ensureDatabase(bare);
  const tables = async () => {
    const client = new Client({ connectionString: bare });
    await client.connect();
    try {
      return (await client.query<{ n: string }>("select count(*) as n from pg_tables where schemaname = 'public'")).rows[0]!.n;
    } finally {
      await client.end();
    }
  };
  try {
    for (const argv of [['api-keys', 'list'], ['organizations', 'list'], ['api-keys', 'create', '--org', 'a', '--name', 'b', '--permission', 'read'], ['secrets', 'rotate']]) {
      const refused = await cli(argv, { DATABASE_URL: bare });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/schema is not migrated .*npm run cli -- migrate/);
    }
    expect(await tables()).toBe('0');

    const migrated = await cli(['migrate', '--json'], { DATABASE_URL: bare });
    expect(migrated.code).toBe(0);
    expect(migrated.json().pending_before.length).toBeGreaterThan(10);
    expect(migrated.json().pending_after).toEqual([]);
    const again = await cli(['migrate'], { DATABASE_URL: bare });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/0 were pending/);
    expect((await cli(['organizations', 'list', '--json'], { DATABASE_URL: bare })).json()).toEqual({ data: [] });
  } finally {
    await releaseTestDatabase(bare);
  }
});

test('a database that cannot be reached is a failure (exit 1) with the reason', async () => {
  const down = await cli(['organizations', 'list'], { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/nowhere' });
  expect(down.code).toBe(1);
  expect(down.stderr).toMatch(/cannot connect to the database/);
});

test('the entry point exits with the command\'s code', async () => {
  const run = spawnProcess(path.join(root, 'node_modules', '.bin', 'tsx'), ['scripts/cli.ts', 'organizations', 'list', '--json'], {
    cwd: root,
    env: { DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'silent' },
  });
  expect((await run.exited).code).toBe(0);
  expect(JSON.parse(run.lines.filter((l) => l.trim() !== '').join('\n')).data).toEqual(expect.any(Array));
});
