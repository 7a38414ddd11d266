/**
 * Server-to-server JWTs: an application registers its public keys, signs tokens itself
 * (jose, as a customer's backend would), and every attack in issue 10's list is refused
 * with its exact status and code.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK, SignJWT, type CryptoKey } from 'jose';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type HttpsReceiver, startHttpsReceiver, testCertificates } from '../../helpers/https-receiver';

type Alg = 'RS256' | 'PS256' | 'ES256' | 'EdDSA';
interface Signer {
  alg: Alg;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function signer(alg: Alg, kid = `${alg}-${randomUUID()}`): Promise<Signer> {
  const { privateKey, publicKey } = await generateKeyPair(alg, alg === 'EdDSA' ? { crv: 'Ed25519' } : {});
  return { alg, kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid } };
}

describe('JWT applications', () => {
  let t: TestApp;
  let admin: string;
  let audience: string;
  let receiver: HttpsReceiver;

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    t = await createTestApp({ WEBHOOK_EXTRA_CA_FILE: testCertificates().caFile });
    admin = (await t.createKey('admin')).key;
    audience = t.config.JWT_AUDIENCE_EFFECTIVE;
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const register = async (body: Record<string, unknown>) =>
    t.request.post('/v1/applications').set(bearer(admin)).send({ name: `app-${randomUUID()}`, ...body });

  /** A token with exactly the contract's claims; `claims` adds, overrides or removes (undefined) any of them. */
  async function token(s: Signer, iss: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) {
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { iss, sub: 'billing-service', aud: audience, iat: now, exp: now + 300, scope: 'workflows:read', ...claims };
    for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
    return new SignJWT(payload).setProtectedHeader({ alg: s.alg, kid: s.kid, ...header }).sign(s.privateKey);
  }

  const call = (jwt: string, path = '/v1/workflows') => t.request.get(path).set(bearer(jwt));

  function expectInvalid(res: { status: number; body: { error: { code: string } }; headers: Record<string, string> }) {
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_TOKEN');
    expect(res.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
  }

  describe('with an inline JWK set', () => {
    let es: Signer;
    let appId: string;

    beforeAll(async () => {
      es = await signer('ES256');
      const res = await register({ scopes: ['workflows:read', 'workflows:write'], jwks: { keys: [es.publicJwk] } });
      expect(res.status).toBe(201);
      appId = res.body.data.id;
      expect(res.body.data).toMatchObject({ id: expect.stringMatching(/^app_/), scopes: ['workflows:read', 'workflows:write'], jwks_uri: null, audience, require_jti: false });
    });

    it('accepts a token with exactly the contract’s claims (no jti) for every request until its exp', async () => {
      const jwt = await token(es, appId);
      expect(Object.keys(JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString())).sort()).toEqual(['aud', 'exp', 'iat', 'iss', 'scope', 'sub']);
      for (let i = 0; i < 3; i++) expect((await call(jwt)).status).toBe(200);
      // A jti, when sent, is not checked for replays unless the application asks for it.
      const withJti = await token(es, appId, { jti: randomUUID() });
      expect((await call(withJti)).status).toBe(200);
      expect((await call(withJti)).status).toBe(200);
      // Until exp (and its 60 s skew), not beyond: the same claims with an exp past.
      const now = Math.floor(Date.now() / 1000);
      expectInvalid(await call(await token(es, appId, { iat: now - 400, exp: now - 100 })));
    });

    it('answers /v1/me for a token whatever its scopes: only analytics:read', async () => {
      const analyst = await signer('ES256');
      const created = await register({ scopes: ['analytics:read'], jwks: { keys: [analyst.publicJwk] } });
      const jwt = await token(analyst, created.body.data.id, { scope: 'analytics:read' });
      const me = await call(jwt, '/v1/me');
      expect(me.status).toBe(200);
      expect(me.body.data).toMatchObject({ credential_type: 'jwt', credential_id: created.body.data.id, scopes: ['analytics:read'], sub: 'billing-service' });
      expect((await call(jwt, '/v1/workflows')).status).toBe(403);
    });

    it('accepts RS256, PS256, ES256 and EdDSA tokens and describes them at /v1/me with their sub', async () => {
      const signers = await Promise.all((['RS256', 'PS256', 'EdDSA'] as const).map((alg) => signer(alg)));
      const created = await register({ scopes: ['workflows:read'], jwks: { keys: signers.map((s) => s.publicJwk) } });
      expect(created.status).toBe(201);
      for (const s of signers) {
        const me = await call(await token(s, created.body.data.id), '/v1/me');
        expect(me.status).toBe(200);
        expect(me.body.data).toMatchObject({ credential_type: 'jwt', credential_id: created.body.data.id, permission: null, scopes: ['workflows:read'], sub: 'billing-service' });
      }
      const me = await call(await token(es, appId, { scope: 'workflows:read workflows:write' }), '/v1/me');
      expect(me.body.data).toMatchObject({ credential_id: appId, scopes: ['workflows:read', 'workflows:write'], expires_at: expect.any(String) });
    });

    it('lets calls succeed or fail by the token’s scope (403 SCOPE_INSUFFICIENT)', async () => {
      const write = await t.request.post('/v1/workflows').set(bearer(await token(es, appId))).send({ name: `wf-${randomUUID()}`, channel: 'whatsapp' });
      expect(write.status).toBe(403);
      expect(write.body.error.code).toBe('SCOPE_INSUFFICIENT');
      expect(write.headers['www-authenticate']).toBe('Bearer error="insufficient_scope", scope="workflows:write"');
      const ok = await t.request
        .post('/v1/workflows')
        .set(bearer(await token(es, appId, { scope: 'workflows:read workflows:write' })))
        .send({ name: `wf-${randomUUID()}`, channel: 'whatsapp' });
      expect(ok.status).toBe(201);
    });

    it('refuses a scope beyond the application’s: 403 SCOPE_INSUFFICIENT', async () => {
      const res = await call(await token(es, appId, { scope: 'workflows:read workflows:delete' }));
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('SCOPE_INSUFFICIENT');
    });

    it('refuses alg none: 401 INVALID_TOKEN', async () => {
      const valid = await token(es, appId);
      const [, payload] = valid.split('.');
      const header = Buffer.from(JSON.stringify({ alg: 'none', kid: es.kid })).toString('base64url');
      expectInvalid(await call(`${header}.${payload}.`));
    });

    it('refuses HS256 signed with the public key as the secret: 401 INVALID_TOKEN', async () => {
      const rs = await signer('RS256');
      const created = await register({ scopes: ['workflows:read'], jwks: { keys: [rs.publicJwk] } });
      const now = Math.floor(Date.now() / 1000);
      const secret = new TextEncoder().encode(JSON.stringify(rs.publicJwk));
      const forged = await new SignJWT({ iss: created.body.data.id, sub: 'x', aud: audience, iat: now, exp: now + 60, jti: randomUUID(), scope: 'workflows:read' })
        .setProtectedHeader({ alg: 'HS256', kid: rs.kid })
        .sign(secret);
      expectInvalid(await call(forged));
    });

    it('refuses a wrong aud or iss: 401 INVALID_TOKEN', async () => {
      expectInvalid(await call(await token(es, appId, { aud: 'https://elsewhere.example' })));
      expectInvalid(await call(await token(es, 'app_notregistered0000000')));
      // A registered iss whose keys did not sign the token.
      const other = await register({ scopes: ['workflows:read'], jwks: { keys: [(await signer('ES256')).publicJwk] } });
      expectInvalid(await call(await token(es, other.body.data.id)));
    });

    it('refuses an expired token, a future iat and an over-long lifetime: 401 INVALID_TOKEN', async () => {
      const now = Math.floor(Date.now() / 1000);
      expectInvalid(await call(await token(es, appId, { iat: now - 600, exp: now - 120 })));
      expectInvalid(await call(await token(es, appId, { iat: now + 600, exp: now + 900 })));
      expectInvalid(await call(await token(es, appId, { iat: now, exp: now + 3601 })));
      expectInvalid(await call(await token(es, appId, { exp: undefined })));
      // Within the 60 s skew is fine.
      expect((await call(await token(es, appId, { iat: now + 30, exp: now + 300 }))).status).toBe(200);
    });

    it('refuses an unknown kid: 401 INVALID_TOKEN; kid selects among rotated keys', async () => {
      expectInvalid(await call(await token(es, appId, {}, { kid: 'not-a-registered-kid' })));
      const next = await signer('ES256');
      const rotated = await t.request.put(`/v1/applications/${appId}`).set(bearer(admin)).send({ jwks: { keys: [es.publicJwk, next.publicJwk] } });
      expect(rotated.status).toBe(200);
      expect((await call(await token(next, appId))).status).toBe(200);
      expect((await call(await token(es, appId))).status).toBe(200);
    });

    it('refuses a tampered payload: 401 INVALID_TOKEN', async () => {
      const [h, p, sig] = (await token(es, appId)).split('.');
      const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
      claims.scope = 'workflows:read workflows:write';
      expectInvalid(await call(`${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${sig}`));
    });

    it('with require_jti: refuses a token without jti and a replayed jti (401 INVALID_TOKEN); the option can be switched', async () => {
      const s = await signer('ES256');
      const created = await register({ scopes: ['workflows:read'], jwks: { keys: [s.publicJwk] }, require_jti: true });
      expect([created.status, created.body.data.require_jti]).toEqual([201, true]);
      const id = created.body.data.id;
      expectInvalid(await call(await token(s, id)));
      const once = await token(s, id, { jti: randomUUID() });
      expect((await call(once)).status).toBe(200);
      expectInvalid(await call(once));

      const off = await t.request.put(`/v1/applications/${id}`).set(bearer(admin)).send({ require_jti: false });
      expect([off.status, off.body.data.require_jti]).toEqual([200, false]);
      const reusable = await token(s, id);
      expect((await call(reusable)).status).toBe(200);
      expect((await call(reusable)).status).toBe(200);
      expect((await t.request.get(`/v1/applications/${id}`).set(bearer(admin))).body.data.require_jti).toBe(false);
      expect((await t.request.post('/v1/applications').set(bearer(admin)).send({ name: 'x', scopes: ['workflows:read'], jwks: { keys: [s.publicJwk] }, require_jti: 'yes' })).status).toBe(400);
    });

    it('stops accepting a still-valid token within a second once its key is rotated out, in another process that had it cached', async () => {
      const other = await createTestApp({ DATABASE_URL: t.databaseUrl, PUBLIC_BASE_URL: t.config.BASE_URL, WEBHOOK_EXTRA_CA_FILE: testCertificates().caFile });
      try {
        const [old, next] = await Promise.all([signer('ES256'), signer('ES256')]);
        const created = await register({ scopes: ['workflows:read'], jwks: { keys: [old.publicJwk] } });
        const jwt = await token(old, created.body.data.id);
        expect((await other.request.get('/v1/workflows').set(bearer(jwt))).status).toBe(200);
        const rotated = await t.request.put(`/v1/applications/${created.body.data.id}`).set(bearer(admin)).send({ jwks: { keys: [next.publicJwk] } });
        expect(rotated.status).toBe(200);
        expectInvalid(await call(jwt));
        await new Promise((r) => setTimeout(r, other.config.AUTH_CACHE_TTL_MS + 50));
        expectInvalid(await other.request.get('/v1/workflows').set(bearer(jwt)));
        expect((await other.request.get('/v1/workflows').set(bearer(await token(next, created.body.data.id)))).status).toBe(200);
      } finally {
        await other.close();
      }
    });

    it('stops accepting a deleted application’s tokens', async () => {
      const s = await signer('ES256');
      const created = await register({ scopes: ['workflows:read'], jwks: { keys: [s.publicJwk] } });
      const jwt = await token(s, created.body.data.id);
      expect((await call(jwt)).status).toBe(200);
      expect((await t.request.delete(`/v1/applications/${created.body.data.id}`).set(bearer(admin))).status).toBe(200);
      expectInvalid(await call(jwt));
    });
  });

  describe('with a jwks_uri', () => {
    it('fetches the keys over HTTPS and caches them', async () => {
      const s = await signer('ES256');
      receiver.setResponder((req) =>
        req.path === '/jwks.json' ? { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ keys: [s.publicJwk] }) } : { status: 404 },
      );
      const created = await register({ scopes: ['workflows:read'], jwks_uri: receiver.url('/jwks.json') });
      expect(created.status).toBe(201);
      expect(created.body.data).toMatchObject({ jwks: null, jwks_uri: receiver.url('/jwks.json') });
      expect((await call(await token(s, created.body.data.id))).status).toBe(200);
      expect((await call(await token(s, created.body.data.id))).status).toBe(200);
      expect(receiver.requestsTo('/jwks.json')).toHaveLength(1);
    });

    it('refuses a jwks_uri that is not HTTPS, and one at a private address unless private networks are allowed', async () => {
      const http = await register({ scopes: ['workflows:read'], jwks_uri: 'http://example.com/jwks.json' });
      expect(http.status).toBe(400);
      expect(http.body.error).toMatchObject({ code: 'INVALID_JWKS_URI', field: 'jwks_uri' });

      const strict = await createTestApp({ DATABASE_URL: t.databaseUrl, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
      try {
        const literal = await strict.request.post('/v1/applications').set(bearer(admin)).send({ name: 'meta', scopes: ['workflows:read'], jwks_uri: 'https://169.254.169.254/jwks' });
        expect(literal.status).toBe(400);
        expect(literal.body.error.code).toBe('INVALID_JWKS_URI');
        // A name that resolves to loopback passes registration (no DNS there) and is refused when the keys are fetched.
        const s = await signer('ES256');
        const before = receiver.requestsTo('/jwks.json').length;
        const created = await strict.request
          .post('/v1/applications')
          .set(bearer(admin))
          .send({ name: `ssrf-${randomUUID()}`, scopes: ['workflows:read'], jwks_uri: receiver.url('/jwks.json', 'localhost.') });
        expect(created.status).toBe(201);
        expectInvalid(await strict.request.get('/v1/workflows').set(bearer(await token(s, created.body.data.id))));
        expect(receiver.requestsTo('/jwks.json')).toHaveLength(before);
      } finally {
        await strict.close();
      }
    });
  });

  it('validates registrations: keys must be public with unique kids; one key source', async () => {
    const s = await signer('ES256');
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const priv = { ...(await exportJWK(privateKey)), kid: 'p' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ scopes: ['workflows:read'], jwks: { keys: [priv] } }, 'INVALID_JWKS'],
      [{ scopes: ['workflows:read'], jwks: { keys: [s.publicJwk, s.publicJwk] } }, 'INVALID_JWKS'],
      [{ scopes: ['workflows:read'], jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'h' }] } }, 'INVALID_REQUEST'],
      [{ scopes: ['workflows:read'] }, 'MISSING_REQUIRED_FIELD'],
      [{ scopes: ['workflows:read'], jwks: { keys: [s.publicJwk] }, jwks_uri: 'https://example.com/k' }, 'MISSING_REQUIRED_FIELD'],
      [{ scopes: ['nope:read'], jwks: { keys: [s.publicJwk] } }, 'INVALID_REQUEST'],
    ];
    for (const [body, code] of cases) {
      const res = await register(body);
      expect([res.status, res.body.error?.code]).toEqual([400, code]);
    }
    const reader = await t.createKey('read_write');
    expect((await t.request.get('/v1/applications').set(bearer(reader.key))).status).toBe(403);
    const list = await t.request.get('/v1/applications').set(bearer(admin));
    expect(list.status).toBe(200);
    expect(list.body.pagination.total).toBeGreaterThan(0);
  });
});
