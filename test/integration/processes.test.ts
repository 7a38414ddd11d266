import path from 'node:path';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { serviceEnv, spawnProcess, spawnService } from '../helpers/process';

const root = path.resolve(__dirname, '..', '..');
const tsx = path.join(root, 'node_modules', '.bin', 'tsx');

describe('processes: CLI and service start-up', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  /** `npm run cli -- api-keys create --org <org> --name <name> --permission <permission>` */
  const createKeyWithCli = (org: string, name: string, permission: string) =>
    spawnProcess(tsx, ['scripts/cli.ts', 'api-keys', 'create', '--org', org, '--name', name, '--permission', permission], {
      cwd: root,
      env: serviceEnv(t),
    });

  it('creates an organization and an admin key from the CLI, printing the key alone on the last line', async () => {
    const org = `cli-org-${Date.now()}`;
    const cli = createKeyWithCli(org, 'bootstrap', 'admin');
    const { code } = await cli.exited;
    expect(code).toBe(0);
    const key = cli.lines.filter((l) => l.trim() !== '').at(-1);
    expect(key).toMatch(/^wfa_[0-9A-Za-z]{43}$/);
    const me = await t.request.get('/v1/me').set(bearer(key!));
    expect(me.status).toBe(200);
    expect(me.body.data.permission).toBe('admin');
    const orgs = await t.query<{ id: string }>('select id from organizations where name = ?', [org]);
    expect(me.body.data.organization_id).toBe(orgs[0]!.id);

    const again = createKeyWithCli(org, 'second', 'read');
    expect((await again.exited).code).toBe(0);
    expect(await t.query('select id from organizations where name = ?', [org])).toHaveLength(1);
  });

  it('refuses bad CLI arguments with a usage message and no key', async () => {
    const before = await t.query('select id from api_keys');
    const cli = createKeyWithCli('x', 'y', 'root');
    expect((await cli.exited).code).toBe(2);
    expect(cli.lines.join('\n')).toMatch(/permission/);
    expect(cli.lines.join('\n')).toMatch(/usage:/);
    expect(await t.query('select id from api_keys')).toEqual(before);
  });

  it('refuses to start with an invalid configuration, naming the variable', async () => {
    const proc = spawnService('api', t, { PORT: 'eighty' });
    expect((await proc.exited).code).toBe(1);
    expect(proc.lines.join('\n')).toMatch(/PORT/);
  });

  it('runs API and worker in one process, serves readiness, and drains on SIGTERM', async () => {
    // As `npm start` runs it (tsx), migrating at start, and without the run's prebuilt bundle:
    // the worker bundles the workflows at start, as by default.
    const proc = spawnService('all', t, { PORT: '0', TEMPORAL_WORKFLOW_BUNDLE_PATH: undefined, MIGRATE_ON_START: undefined }, { viaTsx: true });
    try {
      const [, port] = await proc.waitForLine(/API listening on http:\/\/localhost:(\d+)/, 60_000);
      await proc.waitForLine(/worker running/, 60_000);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok', temporal: 'ok' } });
    } finally {
      const exit = await proc.kill('SIGTERM', 30_000);
      expect(exit.code).toBe(0);
      expect(proc.lines.join('\n')).toContain('"msg":"stopped"');
      // One format: the Temporal SDK's logs and webpack's bundling output come through pino too.
      const notJson = proc.lines.filter((l) => {
        try {
          return typeof JSON.parse(l) !== 'object';
        } catch {
          return l.trim() !== '';
        }
      });
      expect(notJson).toEqual([]);
      expect(proc.lines.some((l) => l.includes('"component":"temporal-sdk"') && l.includes('Workflow bundle created'))).toBe(true);
    }
  });
});
