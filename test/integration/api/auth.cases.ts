import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { waitFor } from '../../helpers/wait';

describe('authentication and API keys', () => {
  let t: TestApp;
  let admin: { key: string; id: string; organizationId: string };

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.createKey('admin');
  });
  afterAll(() => t.close());

  it('answers 401 MISSING_AUTHENTICATION with WWW-Authenticate when no credential is sent', async () => {
    const res = await t.request.get('/v1/workflows');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(res.body).toEqual({ error: { code: 'MISSING_AUTHENTICATION', message: expect.any(String) } });
  });

  it('answers 401 INVALID_API_KEY for an unknown key and INVALID_TOKEN for a non-key token', async () => {
    const bad = await t.request.get('/v1/workflows').set(bearer('wfa_notarealkey'));
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('INVALID_API_KEY');
    expect(bad.headers['www-authenticate']).toMatch(/^Bearer/);
    const token = await t.request.get('/v1/workflows').set(bearer('some.opaque.token'));
    expect(token.status).toBe(401);
    expect(token.body.error.code).toBe('INVALID_TOKEN');
    const scheme = await t.request.get('/v1/workflows').set('Authorization', `Basic ${admin.key}`);
    expect(scheme.status).toBe(401);
  });

  it('describes the credential at /v1/me', async () => {
    const res = await t.request.get('/v1/me').set(bearer(admin.key));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      credential_type: 'api_key',
      credential_id: admin.id,
      name: 'admin key',
      organization_id: admin.organizationId,
      permission: 'admin',
      scopes: expect.arrayContaining(['workflows:read', 'workflows:delete', 'admin']),
    });
    const reader = await t.createKey('read');
    const me = await t.request.get('/v1/me').set(bearer(reader.key));
    expect(me.body.data.scopes).toEqual(['workflows:read', 'triggers:read', 'webhooks:read', 'analytics:read']);
  });

  it('creates a key shown once, lists it by prefix and last four, and revokes it', async () => {
    const created = await t.request.post('/v1/api-keys').set(bearer(admin.key)).send({ name: 'CI', permission: 'read_write' });
    expect(created.status).toBe(201);
    const { key, id } = created.body.data;
    expect(key).toMatch(/^wfa_[0-9A-Za-z]{43}$/);
    expect(created.body.data).toMatchObject({ name: 'CI', permission: 'read_write', prefix: key.slice(0, 8), last_four: key.slice(-4), last_used_at: null });

    const list = await t.request.get('/v1/api-keys').set(bearer(admin.key));
    expect(list.status).toBe(200);
    const listed = list.body.data.find((k: { id: string }) => k.id === id);
    expect(listed).toMatchObject({ prefix: key.slice(0, 8), last_four: key.slice(-4) });
    expect(JSON.stringify(list.body)).not.toContain(key);
    const stored = await t.query<{ key_hash: string }>('select key_hash from api_keys where id = ?', [id]);
    expect(stored[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(key);

    expect((await t.request.get('/v1/workflows').set(bearer(key))).status).toBe(200);
    // Recorded after the answer, without holding the request up: shown once that write is in.
    const lastUsed = await waitFor(async () => {
      const got = await t.request.get(`/v1/api-keys/${id}`).set(bearer(admin.key));
      return got.body.data.last_used_at ?? undefined;
    }, "the key's last_used_at", 10_000);
    expect(Date.parse(lastUsed)).toBeGreaterThan(Date.now() - 60_000);

    const revoked = await t.request.delete(`/v1/api-keys/${id}`).set(bearer(admin.key));
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({ message: expect.any(String) });
    const after = await t.request.get('/v1/workflows').set(bearer(key));
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('INVALID_API_KEY');
  });

  it('stops a revoked key within a second in another process that had it cached', async () => {
    const other = await createTestApp({ DATABASE_URL: t.databaseUrl });
    try {
      const { key, id } = await t.createKey('read', admin.organizationId);
      expect((await other.request.get('/v1/workflows').set(bearer(key))).status).toBe(200);
      await t.request.delete(`/v1/api-keys/${id}`).set(bearer(admin.key)).expect(200);
      await new Promise((r) => setTimeout(r, other.config.AUTH_CACHE_TTL_MS + 50));
      expect((await other.request.get('/v1/workflows').set(bearer(key))).status).toBe(401);
    } finally {
      await other.close().catch(() => undefined);
    }
  });

  it('keeps API key management to admins', async () => {
    const writer = await t.createKey('read_write', admin.organizationId);
    for (const call of [
      t.request.get('/v1/api-keys'),
      t.request.post('/v1/api-keys').send({ name: 'x', permission: 'admin' }),
      t.request.delete(`/v1/api-keys/${admin.id}`),
    ]) {
      const res = await call.set(bearer(writer.key));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('INSUFFICIENT_PERMISSIONS');
    }
    expect((await t.request.get(`/v1/me`).set(bearer(admin.key))).status).toBe(200);
  });

  it("cannot see or revoke another organization's keys", async () => {
    const stranger = await t.createKey('admin', await t.createOrg());
    const res = await t.request.delete(`/v1/api-keys/${admin.id}`).set(bearer(stranger.key));
    expect(res.status).toBe(404);
    const list = await t.request.get('/v1/api-keys').set(bearer(stranger.key));
    expect(list.body.data.map((k: { id: string }) => k.id)).toEqual([stranger.id]);
    expect((await t.request.get('/v1/me').set(bearer(admin.key))).status).toBe(200);
  });

  it.each([
    [{ permission: 'admin' }, 400, 'MISSING_REQUIRED_FIELD', 'name'],
    [{ name: 'x' }, 400, 'MISSING_REQUIRED_FIELD', 'permission'],
    [{ name: 'x', permission: 'root' }, 400, 'INVALID_REQUEST', 'permission'],
    [{ name: 7, permission: 'read' }, 400, 'INVALID_REQUEST', 'name'],
    [{ name: 'x'.repeat(201), permission: 'read' }, 400, 'INVALID_REQUEST', 'name'],
    [{ name: 'x', permission: 'read', key: 'wfa_mine' }, 400, 'INVALID_REQUEST', 'key'],
  ])('rejects key creation body %j', async (body, status, code, field) => {
    const before = await t.query<{ n: number }>('select count(*)::int as n from api_keys');
    const res = await t.request.post('/v1/api-keys').set(bearer(admin.key)).send(body);
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, field });
    expect(await t.query('select count(*)::int as n from api_keys')).toEqual(before);
  });
});
