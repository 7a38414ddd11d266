/** Users who consent to OAuth clients: admin-only management, scrypt hashes, the CLI reading the password from stdin. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { bearer, createTestApp, type TestApp, uniqueSuffix } from '../../helpers/app';

describe('users', () => {
  let t: TestApp;
  let admin: { key: string; organizationId: string };

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.createKey('admin');
  });
  afterAll(() => t.close());

  it('creates, lists, updates and deletes users; never shows the password or its hash', async () => {
    const created = await t.request.post('/v1/users').set(bearer(admin.key)).send({ email: 'Ada@Example.com', password: 'correct horse battery', role: 'read' });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({ id: expect.stringMatching(/^usr_/), email: 'ada@example.com', role: 'read', created_at: expect.any(String), updated_at: expect.any(String) });
    const id = created.body.data.id;
    const [row] = await t.query<{ password_hash: string }>('select password_hash from users where id = ?', [id]);
    expect(row!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{86}$/);

    const dup = await t.request.post('/v1/users').set(bearer(admin.key)).send({ email: 'ADA@example.com', password: 'another password', role: 'admin' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'USER_ALREADY_EXISTS', field: 'email' });

    const list = await t.request.get('/v1/users').set(bearer(admin.key));
    expect(list.status).toBe(200);
    expect(list.body.data.map((u: { id: string }) => u.id)).toContain(id);
    expect(JSON.stringify(list.body)).not.toMatch(/scrypt|password/);

    const updated = await t.request.put(`/v1/users/${id}`).set(bearer(admin.key)).send({ role: 'read_write' });
    expect(updated.body.data.role).toBe('read_write');
    expect((await t.request.put(`/v1/users/${id}`).set(bearer(admin.key)).send({ password: 'short' })).status).toBe(400);

    const other = await t.createKey('admin', await t.createOrg());
    expect((await t.request.get(`/v1/users/${id}`).set(bearer(other.key))).status).toBe(404);
    expect((await t.request.delete(`/v1/users/${id}`).set(bearer(other.key))).status).toBe(404);
    const writer = await t.createKey('read_write', admin.organizationId);
    expect((await t.request.get('/v1/users').set(bearer(writer.key))).body.error.code).toBe('INSUFFICIENT_PERMISSIONS');

    expect((await t.request.delete(`/v1/users/${id}`).set(bearer(admin.key))).status).toBe(200);
    expect((await t.request.get(`/v1/users/${id}`).set(bearer(admin.key))).body.error.code).toBe('USER_NOT_FOUND');
  });

  it('rejects bad bodies with 400', async () => {
    for (const body of [{ email: 'nope', password: 'long enough pw', role: 'read' }, { email: 'a@b.co', password: 'long enough pw', role: 'root' }, { email: 'a@b.co', role: 'read' }]) {
      const res = await t.request.post('/v1/users').set(bearer(admin.key)).send(body);
      expect(res.status).toBe(400);
    }
  });

  it('creates a user from the CLI, reading the password from stdin', async () => {
    const org = `cli-${uniqueSuffix()}`;
    const run = (input: string) =>
      spawnSync('node', ['--require', 'tsx/cjs', 'scripts/cli.ts', 'users', 'create', '--org', org, '--email', 'ops@example.com', '--role', 'admin'], {
        cwd: path.resolve(__dirname, '../../..'),
        input,
        env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'silent' },
        encoding: 'utf8',
      });
    const ok = run('a long enough password\n');
    expect(ok.stderr).toBe('');
    expect(ok.status).toBe(0);
    const userId = ok.stdout.trim().split('\n').pop();
    const [row] = await t.query<{ email: string; role: string }>('select email, role from users where id = ?', [userId]);
    expect(row).toEqual({ email: 'ops@example.com', role: 'admin' });
    const short = run('short\n');
    expect(short.status).toBe(2);
    expect(short.stderr).toMatch(/password/);
  });
});
