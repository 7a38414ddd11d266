/**
 * OAuth 2.0 end to end: an untouched third-party client library (openid-client v6) does
 * discovery, the PKCE authorization-code flow, refresh, introspection and revocation
 * against the running service; a cookie-keeping form browser signs in and consents.
 * Then /v1 calls succeed or fail by scope, and every attack of issue 10 is refused.
 */
import * as oauth from 'openid-client';
import { purgeExpiredOAuthModels } from '../../../src/modules/oauth/oauth-adapter';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { createClient, createUser, FormBrowser, signInAndConsent } from '../../helpers/oauth';

const REDIRECT = 'https://client.example/callback';

describe('OAuth 2.0 authorization server', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp({ SIGNIN_ATTEMPTS_PER_EMAIL: '3' });
    admin = (await t.createKey('admin')).key;
  });
  afterAll(() => t.close());

  async function discover(clientId: string, secret: string | null) {
    return oauth.discovery(new URL(t.config.BASE_URL), clientId, undefined, secret ? oauth.ClientSecretPost(secret) : oauth.None(), {
      algorithm: 'oauth2',
      execute: [oauth.allowInsecureRequests],
    });
  }

  /** Signs in and approves in a form browser; returns the redirect to the client (with code or error). */
  const authorize = (url: URL, user: { email: string; password: string }, decision: 'confirm' | 'abort' = 'confirm') =>
    signInAndConsent(t.config.BASE_URL, url.href, user, decision);

  it('serves RFC 8414 discovery with the issuer and the /oauth endpoints', async () => {
    const res = await fetch(`${t.config.BASE_URL}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as Record<string, string>;
    expect(meta).toMatchObject({
      issuer: t.config.BASE_URL,
      authorization_endpoint: `${t.config.BASE_URL}/oauth/authorize`,
      token_endpoint: `${t.config.BASE_URL}/oauth/token`,
      revocation_endpoint: `${t.config.BASE_URL}/oauth/revoke`,
      introspection_endpoint: `${t.config.BASE_URL}/oauth/introspect`,
      jwks_uri: `${t.config.BASE_URL}/oauth/jwks`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
    });
    const jwks = (await (await fetch(meta.jwks_uri!)).json()) as { keys: object[] };
    expect(jwks.keys[0]).not.toHaveProperty('d');
  });

  it('documents the security schemes and the new resources in OpenAPI', async () => {
    const doc = (await t.request.get('/v1/openapi.json')).body;
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['apiKey', 'jwt', 'oauth2']);
    expect(doc.components.securitySchemes.oauth2.flows.authorizationCode).toMatchObject({
      authorizationUrl: `${t.config.BASE_URL}/oauth/authorize`,
      tokenUrl: `${t.config.BASE_URL}/oauth/token`,
      scopes: expect.objectContaining({ 'workflows:read': expect.any(String), admin: expect.any(String) }),
    });
    expect(doc.components.securitySchemes.jwt).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(doc.paths['/v1/workflows'].post.security).toEqual([{ apiKey: [] }, { oauth2: ['workflows:write'] }, { jwt: ['workflows:write'] }]);
    for (const path of ['/v1/oauth-clients', '/v1/oauth-clients/{client_id}/rotate-secret', '/v1/users', '/v1/applications', '/oauth/token', '/oauth/revoke', '/oauth/introspect']) {
      expect(doc.paths).toHaveProperty([path]);
    }
    expect(doc.paths['/oauth/token'].post.requestBody.content).toHaveProperty(['application/x-www-form-urlencoded']);
  });

  it('runs the PKCE code flow with openid-client: token, /v1 by scope, refresh, introspect, revoke', async () => {
    const user = await createUser(t, admin, 'read_write');
    const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read', 'workflows:write', 'workflows:delete', 'triggers:read'] });
    expect(registered.client_secret).toMatch(/^[\w-]{43}$/);
    const config = await discover(registered.client_id, registered.client_secret);

    const verifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'workflows:read workflows:write workflows:delete webhooks:read',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const callback = await authorize(url, user);
    expect(callback.origin + callback.pathname).toBe(REDIRECT);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.search).not.toContain('error');

    const tokens = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.refresh_token).toEqual(expect.any(String));
    // requested ∩ client's (no webhooks:read) ∩ read_write role (no delete)
    expect(tokens.scope!.split(' ').sort()).toEqual(['workflows:read', 'workflows:write']);

    const me = await t.request.get('/v1/me').set(bearer(tokens.access_token));
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ credential_type: 'oauth', client_id: registered.client_id, user_id: user.id, sub: user.id, permission: 'read_write', scopes: ['workflows:read', 'workflows:write'], expires_at: expect.any(String) });
    expect((await t.request.post('/v1/workflows').set(bearer(tokens.access_token)).send({ name: 'From OAuth', channel: 'whatsapp' })).status).toBe(201);
    const triggers = await t.request.get('/v1/triggers').set(bearer(tokens.access_token));
    expect(triggers.status).toBe(403);
    expect(triggers.body.error.code).toBe('SCOPE_INSUFFICIENT');

    const introspected = await oauth.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, client_id: registered.client_id, sub: user.id, scope: expect.stringContaining('workflows:read') });

    const refreshed = await oauth.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.expires_in).toBe(3600);
    expect((await t.request.get('/v1/workflows').set(bearer(refreshed.access_token))).status).toBe(200);

    await oauth.tokenRevocation(config, refreshed.access_token);
    const after = await t.request.get('/v1/workflows').set(bearer(refreshed.access_token));
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('INVALID_TOKEN');
    expect(after.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect((await oauth.tokenIntrospection(config, refreshed.access_token)).active).toBe(false);
  });

  /** Registers a client and a user, runs the code flow with PKCE, and returns what a client app holds afterwards. */
  async function signedIn(opts: { role?: 'read' | 'read_write' | 'admin'; type?: 'confidential' | 'public'; scopes?: string[]; scope?: string } = {}) {
    const user = await createUser(t, admin, opts.role ?? 'read_write');
    const registered = await createClient(t, admin, { type: opts.type ?? 'confidential', scopes: opts.scopes ?? ['workflows:read', 'workflows:write'] });
    const config = await discover(registered.client_id, registered.client_secret);
    const verifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: opts.scope ?? 'workflows:read workflows:write',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const callback = await authorize(url, user);
    return { user, registered, config, verifier, state, callback, code: callback.searchParams.get('code')! };
  }

  /** A raw form POST to the token endpoint, to see the exact status and OAuth error. */
  async function tokenRequest(fields: Record<string, string>) {
    const res = await fetch(`${t.config.BASE_URL}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  }

  const codeExchange = (s: Awaited<ReturnType<typeof signedIn>>, extra: Record<string, string> = {}) =>
    tokenRequest({
      grant_type: 'authorization_code',
      code: s.code,
      redirect_uri: REDIRECT,
      client_id: s.registered.client_id,
      ...(s.registered.client_secret ? { client_secret: s.registered.client_secret } : {}),
      code_verifier: s.verifier,
      ...extra,
    });

  async function expectInvalidToken(token: string) {
    const res = await t.request.get('/v1/workflows').set(bearer(token));
    expect([res.status, res.body.error.code, res.headers['www-authenticate']]).toEqual([401, 'INVALID_TOKEN', 'Bearer error="invalid_token"']);
  }

  describe('attacks', () => {
    it('a reused code: 400 invalid_grant, and the tokens it gave are revoked', async () => {
      const s = await signedIn();
      const first = await codeExchange(s);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'workflows:read workflows:write' });
      const again = await codeExchange(s);
      expect([again.status, again.body.error]).toEqual([400, 'invalid_grant']);
      expect(again.body.error_description).toEqual(expect.any(String));
      await expectInvalidToken(first.body.access_token!);
    });

    it('a mismatched redirect_uri: 400 at /oauth/authorize (never redirected there) and 400 invalid_grant at /oauth/token', async () => {
      const s = await signedIn();
      const url = oauth.buildAuthorizationUrl(s.config, { redirect_uri: 'https://client.example/callback/evil', scope: 'workflows:read', state: 'x', code_challenge: await oauth.calculatePKCECodeChallenge(s.verifier), code_challenge_method: 'S256' });
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('invalid_redirect_uri');
      const exchange = await codeExchange(s, { redirect_uri: 'https://client.example/other' });
      expect([exchange.status, exchange.body.error]).toEqual([400, 'invalid_grant']);
    });

    it('PKCE missing for a public client: error=invalid_request back to the client; a wrong verifier: 400 invalid_grant', async () => {
      const registered = await createClient(t, admin, { type: 'public', scopes: ['workflows:read'] });
      const config = await discover(registered.client_id, null);
      const res = await fetch(oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'workflows:read', state: 'st' }), { redirect: 'manual' });
      const location = new URL(res.headers.get('location')!);
      expect(location.origin + location.pathname).toBe(REDIRECT);
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('state')).toBe('st');

      const s = await signedIn({ type: 'public' });
      const wrong = await codeExchange(s, { code_verifier: oauth.randomPKCECodeVerifier() });
      expect([wrong.status, wrong.body.error]).toEqual([400, 'invalid_grant']);
      // The public client with the right verifier gets its tokens without a secret.
      const s2 = await signedIn({ type: 'public' });
      expect((await codeExchange(s2)).status).toBe(200);
    });

    it('a wrong client secret: 401 invalid_client', async () => {
      const s = await signedIn();
      const res = await codeExchange(s, { client_secret: 'not-the-secret' });
      expect([res.status, res.body.error]).toEqual([401, 'invalid_client']);
    });

    it('refresh-token reuse: 400 invalid_grant, and it kills its successor (refresh and access tokens)', async () => {
      const s = await signedIn();
      const tokens = await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
      const successor = await oauth.refreshTokenGrant(s.config, tokens.refresh_token!);
      const reuse = await tokenRequest({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: s.registered.client_id, client_secret: s.registered.client_secret! });
      expect([reuse.status, reuse.body.error]).toEqual([400, 'invalid_grant']);
      const next = await tokenRequest({ grant_type: 'refresh_token', refresh_token: successor.refresh_token!, client_id: s.registered.client_id, client_secret: s.registered.client_secret! });
      expect([next.status, next.body.error]).toEqual([400, 'invalid_grant']);
      await expectInvalidToken(successor.access_token);
    });

    it('a revoked token stops working within a second in another process that had it cached', async () => {
      // Another API process of the same deployment: same database, same public base URL.
      const other = await createTestApp({ DATABASE_URL: t.databaseUrl, PUBLIC_BASE_URL: t.config.BASE_URL });
      try {
        const s = await signedIn();
        const tokens = await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
        expect((await other.request.get('/v1/workflows').set(bearer(tokens.access_token))).status).toBe(200);
        // Revoking the refresh token revokes the grant, access tokens included (RFC 7009 §2.1).
        await oauth.tokenRevocation(s.config, tokens.refresh_token!);
        await new Promise((r) => setTimeout(r, other.config.AUTH_CACHE_TTL_MS + 50));
        const res = await other.request.get('/v1/workflows').set(bearer(tokens.access_token));
        expect([res.status, res.body.error.code]).toEqual([401, 'INVALID_TOKEN']);
      } finally {
        await other.close();
      }
    });

    it('another client cannot introspect or revoke a token: {active: false}, and the token keeps working', async () => {
      const s = await signedIn();
      const tokens = await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
      const stranger = await createClient(t, (await t.createKey('admin', await t.createOrg())).key, { type: 'confidential', scopes: ['workflows:read'] });
      const strangerConfig = await discover(stranger.client_id, stranger.client_secret);
      expect(await oauth.tokenIntrospection(strangerConfig, tokens.access_token)).toEqual({ active: false });
      await oauth.tokenRevocation(strangerConfig, tokens.access_token);
      await oauth.tokenRevocation(strangerConfig, tokens.refresh_token!);
      expect((await t.request.get('/v1/workflows').set(bearer(tokens.access_token))).status).toBe(200);
    });

    it('a forged form post (no CSRF token): 403, nothing signed in', async () => {
      const user = await createUser(t, admin, 'read');
      const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read'] });
      const config = await discover(registered.client_id, registered.client_secret);
      const browser = new FormBrowser(t.config.BASE_URL);
      const page = await browser.open(oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'workflows:read', state: 's' }).href);
      const forged = await browser.submit({ ...page, html: page.html.replace(/name="csrf" value="[^"]*"/g, 'name="csrf" value="forged"') }, '/login', { email: user.email, password: user.password });
      expect(forged.status).toBe(403);
    });
  });

  describe('sign-in and consent', () => {
    it('Deny returns error=access_denied with the state', async () => {
      const user = await createUser(t, admin, 'read');
      const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read'] });
      const config = await discover(registered.client_id, registered.client_secret);
      const callback = await authorize(oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'workflows:read', state: 'deny-me' }), user, 'abort');
      expect(callback.searchParams.get('error')).toBe('access_denied');
      expect(callback.searchParams.get('state')).toBe('deny-me');
      expect(callback.searchParams.get('code')).toBeNull();
    });

    it('a failed sign-in says the same for an unknown email and a wrong password, and is limited per email', async () => {
      const user = await createUser(t, admin, 'read');
      const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read'] });
      const config = await discover(registered.client_id, registered.client_secret);
      const browser = new FormBrowser(t.config.BASE_URL);
      const page = await browser.open(oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'workflows:read', state: 's' }).href);
      const strip = (html: string) => html.replace(/value="[^"]*"/g, '');
      const unknown = await browser.submit(page, '/login', { email: 'nobody@example.com', password: 'whatever it is' });
      const wrong = await browser.submit(page, '/login', { email: 'nobody2@example.com', password: 'whatever it is' });
      const wrongPassword = await browser.submit(page, '/login', { email: user.email, password: 'not the password' });
      expect(unknown.status).toBe(401);
      expect(wrongPassword.status).toBe(401);
      expect(strip(wrongPassword.html)).toBe(strip(unknown.html));
      expect(strip(wrong.html)).toBe(strip(unknown.html));
      expect(unknown.html).toContain('The email or password is incorrect.');
      // SIGNIN_ATTEMPTS_PER_EMAIL is 3 in this file: the 4th attempt for the email is refused, even with the right password.
      await browser.submit(page, '/login', { email: user.email, password: 'not the password' });
      await browser.submit(page, '/login', { email: user.email, password: 'not the password' });
      const limited = await browser.submit(page, '/login', { email: user.email, password: user.password });
      expect(limited.status).toBe(429);
      expect(limited.html).toContain('Too many sign-in attempts');
    });

    it('limits sign-in attempts per IP, whatever the email', async () => {
      const other = await createTestApp({ DATABASE_URL: t.databaseUrl, SIGNIN_ATTEMPTS_PER_IP: '2' });
      try {
        const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read'] });
        const config = await oauth.discovery(new URL(other.config.BASE_URL), registered.client_id, undefined, oauth.ClientSecretPost(registered.client_secret!), {
          algorithm: 'oauth2',
          execute: [oauth.allowInsecureRequests],
        });
        const browser = new FormBrowser(other.config.BASE_URL);
        const page = await browser.open(oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'workflows:read', state: 's' }).href);
        const statuses = [];
        for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) statuses.push((await browser.submit(page, '/login', { email, password: 'wrong password' })).status);
        expect(statuses).toEqual([401, 401, 429]);
      } finally {
        await other.close();
      }
    });

    it('grants requested ∩ client ∩ role, narrows tokens when the role changes, and counts rate limits per grant across refreshes', async () => {
      const s = await signedIn({
        role: 'read_write',
        scopes: ['workflows:read', 'workflows:write', 'workflows:delete', 'triggers:read'],
        scope: 'workflows:read workflows:write workflows:delete triggers:read webhooks:read',
      });
      const tokens = await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
      // webhooks:read is not the client's; workflows:delete is not the role's.
      expect(tokens.scope).toBe('workflows:read workflows:write triggers:read');
      const first = await t.request.get('/v1/workflows').set(bearer(tokens.access_token));
      const refreshed = await oauth.refreshTokenGrant(s.config, tokens.refresh_token!);
      const second = await t.request.get('/v1/workflows').set(bearer(refreshed.access_token));
      expect(Number(second.headers['x-ratelimit-remaining'])).toBe(Number(first.headers['x-ratelimit-remaining']) - 1);

      await t.request.put(`/v1/users/${s.user.id}`).set(bearer(admin)).send({ role: 'read' }).expect(200);
      await new Promise((r) => setTimeout(r, t.config.AUTH_CACHE_TTL_MS + 50));
      const me = await t.request.get('/v1/me').set(bearer(refreshed.access_token));
      expect(me.body.data).toMatchObject({ permission: 'read', scopes: ['workflows:read', 'triggers:read'] });
      await t.request.delete(`/v1/users/${s.user.id}`).set(bearer(admin)).expect(200);
      await new Promise((r) => setTimeout(r, t.config.AUTH_CACHE_TTL_MS + 50));
      await expectInvalidToken(refreshed.access_token);
    });
  });

  it('answers /v1/me for a token whatever its scopes: only analytics:read', async () => {
    const s = await signedIn({ role: 'read', scopes: ['analytics:read'], scope: 'analytics:read' });
    const tokens = await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
    expect(tokens.scope).toBe('analytics:read');
    const me = await t.request.get('/v1/me').set(bearer(tokens.access_token));
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ credential_type: 'oauth', user_id: s.user.id, client_id: s.registered.client_id, scopes: ['analytics:read'] });
    const workflows = await t.request.get('/v1/workflows').set(bearer(tokens.access_token));
    expect([workflows.status, workflows.body.error.code]).toEqual([403, 'SCOPE_INSUFFICIENT']);
    const doc = (await t.request.get('/v1/openapi.json')).body;
    expect(doc.paths['/v1/me'].get.security).toEqual([{ apiKey: [] }, { oauth2: [] }, { jwt: [] }]);
    expect(doc.paths['/v1/me'].get.responses).not.toHaveProperty(['403']);
  });

  describe('/v1/oauth-clients', () => {
    it('shows the secret once, lists without it, rotates it, and deleting a client ends its tokens', async () => {
      const s = await signedIn();
      const { client_id: id, client_secret: secret } = s.registered;
      const list = await t.request.get('/v1/oauth-clients').set(bearer(admin));
      expect(list.status).toBe(200);
      expect(list.body.data.find((c: { id: string }) => c.id === id)).toMatchObject({ client_id: id, type: 'confidential', redirect_uris: [REDIRECT] });
      expect(JSON.stringify(list.body)).not.toContain(secret!);
      const [row] = await t.query<{ secret_hash: string }>('select secret_hash from oauth_clients where id = ?', [id]);
      expect(row!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      const got = await t.request.get(`/v1/oauth-clients/${id}`).set(bearer(admin));
      expect(got.body.data).not.toHaveProperty('client_secret');

      const tokens = await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
      const rotated = await t.request.post(`/v1/oauth-clients/${id}/rotate-secret`).set(bearer(admin));
      expect(rotated.status).toBe(200);
      expect(rotated.body.data.client_secret).not.toBe(secret);
      const refreshWith = (clientSecret: string, refreshToken: string) =>
        tokenRequest({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: id, client_secret: clientSecret });
      expect((await refreshWith(secret!, tokens.refresh_token!)).status).toBe(401);
      const fresh = await refreshWith(rotated.body.data.client_secret, tokens.refresh_token!);
      expect(fresh.status).toBe(200);

      const otherOrg = await t.createKey('admin', await t.createOrg());
      expect((await t.request.get(`/v1/oauth-clients/${id}`).set(bearer(otherOrg.key))).status).toBe(404);
      expect((await t.request.delete(`/v1/oauth-clients/${id}`).set(bearer(otherOrg.key))).status).toBe(404);

      expect((await t.request.delete(`/v1/oauth-clients/${id}`).set(bearer(admin))).status).toBe(200);
      await new Promise((r) => setTimeout(r, t.config.AUTH_CACHE_TTL_MS + 50));
      await expectInvalidToken(fresh.body.access_token!);
      expect((await t.request.get(`/v1/oauth-clients/${id}`).set(bearer(admin))).body.error.code).toBe('OAUTH_CLIENT_NOT_FOUND');
    });

    it('validates registrations', async () => {
      for (const body of [
        { name: 'x', type: 'confidential', redirect_uris: ['http://evil.example/cb'], scopes: ['workflows:read'] },
        { name: 'x', type: 'confidential', redirect_uris: ['https://a.example/cb#frag'], scopes: ['workflows:read'] },
        { name: 'x', type: 'secret', redirect_uris: ['https://a.example/cb'], scopes: ['workflows:read'] },
        { name: 'x', type: 'public', redirect_uris: [], scopes: ['workflows:read'] },
        { name: 'x', type: 'public', redirect_uris: ['https://a.example/cb'], scopes: ['openid'] },
      ]) {
        const res = await t.request.post('/v1/oauth-clients').set(bearer(admin)).send(body);
        expect(res.status).toBe(400);
      }
      const pub = await t.request.post('/v1/oauth-clients').set(bearer(admin)).send({ name: 'CLI', type: 'public', redirect_uris: ['http://127.0.0.1:8765/cb'], scopes: ['workflows:read'] });
      expect(pub.status).toBe(201);
      expect(pub.body.data.client_secret).toBeNull();
      expect((await t.request.post(`/v1/oauth-clients/${pub.body.data.id}/rotate-secret`).set(bearer(admin))).body.error.code).toBe('OAUTH_CLIENT_PUBLIC');
    });
  });

  it('keeps grants and tokens in PostgreSQL and purges expired rows', async () => {
    const s = await signedIn();
    await oauth.authorizationCodeGrant(s.config, s.callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
    const models = await t.query<{ model: string }>('select distinct model from oauth_models where client_id = ? order by model', [s.registered.client_id]);
    expect(models.map((m) => m.model)).toEqual(expect.arrayContaining(['AccessToken', 'AuthorizationCode', 'Grant', 'RefreshToken']));
    await t.query("update oauth_models set expires_at = now() - interval '1 second' where client_id = ? and model = 'AccessToken'", [s.registered.client_id]);
    expect(await purgeExpiredOAuthModels(t.services.orm)).toBeGreaterThanOrEqual(1);
    expect(await t.query("select 1 from oauth_models where client_id = ? and model = 'AccessToken'", [s.registered.client_id])).toEqual([]);
    expect((await t.query("select 1 from oauth_models where client_id = ? and model = 'RefreshToken'", [s.registered.client_id])).length).toBe(1);
  });
});
