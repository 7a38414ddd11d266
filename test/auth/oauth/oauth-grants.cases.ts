/**
 * A person's OAuth grants: the admin API (`/v1/users/{id}/grants`) and the signed-in page
 * (`/oauth/grants`, driven here by the form browser; test/auth/oauth-browser.test.ts drives
 * it in Chromium) list the applications a person approved and revoke one. Revoking kills
 * the app's refresh token at once and its access token within a second in every process.
 */
import * as oauth from 'openid-client';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { createClient, createUser, FormBrowser, signInAndConsent } from '../../helpers/oauth';

const REDIRECT = 'https://client.example/callback';

describe('OAuth grants: list and revoke', () => {
  let t: TestApp;
  let admin: string;
  let organizationName: string;

  beforeAll(async () => {
    t = await createTestApp();
    const key = await t.createKey('admin');
    admin = key.key;
    const [org] = await t.query<{ name: string }>('select name from organizations where id = ?', [key.organizationId]);
    organizationName = org!.name;
  });
  afterAll(() => t.close());

  /** `user` approves a new confidential client for `scope`; returns the client and its tokens. */
  async function approve(user: { email: string; password: string }, scope = 'workflows:read workflows:write') {
    const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read', 'workflows:write'] });
    const config = await oauth.discovery(new URL(t.config.BASE_URL), registered.client_id, undefined, oauth.ClientSecretPost(registered.client_secret!), {
      algorithm: 'oauth2',
      execute: [oauth.allowInsecureRequests],
    });
    const state = oauth.randomState();
    const verifier = oauth.randomPKCECodeVerifier();
    const url = oauth.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope, state, code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const callback = await signInAndConsent(t.config.BASE_URL, url.href, user);
    const tokens = await oauth.authorizationCodeGrant(config, callback, { expectedState: state, pkceCodeVerifier: verifier });
    return { registered, config, tokens };
  }

  const refresh = async (app: Awaited<ReturnType<typeof approve>>) => {
    const res = await fetch(`${t.config.BASE_URL}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: app.tokens.refresh_token!, client_id: app.registered.client_id, client_secret: app.registered.client_secret! }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, string> };
  };
  const workflows = (token: string, on: TestApp = t) => on.request.get('/v1/workflows').set(bearer(token));
  const afterCacheTtl = () => new Promise((r) => setTimeout(r, t.config.AUTH_CACHE_TTL_MS + 50));

  it('the admin API lists a user’s grants per client and revokes one: refresh fails at once, the access token within a second in another process', async () => {
    const other = await createTestApp({ DATABASE_URL: t.databaseUrl, PUBLIC_BASE_URL: t.config.BASE_URL });
    try {
      const user = await createUser(t, admin, 'read_write');
      const crm = await approve(user);
      const mailer = await approve(user, 'workflows:read');
      expect((await workflows(crm.tokens.access_token, other)).status).toBe(200);

      const list = await t.request.get(`/v1/users/${user.id}/grants`).set(bearer(admin));
      expect(list.status).toBe(200);
      expect(list.body.data).toHaveLength(2);
      expect(list.body.data).toEqual(
        expect.arrayContaining([
          { client_id: crm.registered.client_id, client_name: crm.registered.name, scopes: ['workflows:read', 'workflows:write'], granted_at: expect.any(String), expires_at: expect.any(String) },
          expect.objectContaining({ client_id: mailer.registered.client_id, scopes: ['workflows:read'] }),
        ]),
      );

      const revoked = await t.request.delete(`/v1/users/${user.id}/grants/${crm.registered.client_id}`).set(bearer(admin));
      expect(revoked.status).toBe(200);
      expect([await refresh(crm)].map((r) => [r.status, r.body.error])).toEqual([[400, 'invalid_grant']]);
      const refused = await workflows(crm.tokens.access_token);
      expect([refused.status, refused.body.error.code]).toEqual([401, 'INVALID_TOKEN']);
      await afterCacheTtl();
      expect((await workflows(crm.tokens.access_token, other)).status).toBe(401);
      // The other app keeps its access.
      expect((await workflows(mailer.tokens.access_token, other)).status).toBe(200);
      expect((await refresh(mailer)).status).toBe(200);
      expect((await t.request.get(`/v1/users/${user.id}/grants`).set(bearer(admin))).body.data.map((g: { client_id: string }) => g.client_id)).toEqual([mailer.registered.client_id]);

      const again = await t.request.delete(`/v1/users/${user.id}/grants/${crm.registered.client_id}`).set(bearer(admin));
      expect([again.status, again.body.error.code]).toEqual([404, 'GRANT_NOT_FOUND']);

      // Every grant at once.
      expect((await t.request.delete(`/v1/users/${user.id}/grants`).set(bearer(admin))).status).toBe(200);
      expect((await t.request.get(`/v1/users/${user.id}/grants`).set(bearer(admin))).body.data).toEqual([]);
      expect((await refresh(mailer)).status).toBe(400);
    } finally {
      await other.close();
    }
  });

  it('the admin API is admin-only and stays inside the organization', async () => {
    const user = await createUser(t, admin, 'read');
    const reader = await t.createKey('read');
    expect((await t.request.get(`/v1/users/${user.id}/grants`).set(bearer(reader.key))).status).toBe(403);
    const stranger = await t.createKey('admin', await t.createOrg());
    const res = await t.request.get(`/v1/users/${user.id}/grants`).set(bearer(stranger.key));
    expect([res.status, res.body.error.code]).toEqual([404, 'USER_NOT_FOUND']);
    expect((await t.request.delete(`/v1/users/${user.id}/grants`).set(bearer(stranger.key))).status).toBe(404);
    const doc = (await t.request.get('/v1/openapi.json')).body;
    expect(Object.keys(doc.paths['/v1/users/{user_id}/grants']).sort()).toEqual(['delete', 'get']);
    expect(doc.paths['/v1/users/{user_id}/grants/{client_id}']).toHaveProperty('delete');
  });

  it('the signed-in page lists the person’s grants and revokes one; the token dies within a second', async () => {
    const user = await createUser(t, admin, 'read_write');
    const crm = await approve(user);
    const browser = new FormBrowser(t.config.BASE_URL);
    const signIn = await browser.open(`/oauth/grants?organization=${encodeURIComponent(organizationName)}`);
    expect(signIn.status).toBe(200);
    expect(signIn.html).toContain(`value="${organizationName}"`);

    const wrong = await browser.submit(signIn, '/oauth/grants/sign-in', { organization: organizationName, email: user.email, password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).toContain('The organization, email or password is incorrect.');
    // The organization is matched as emails are: spaces around it and capitals do not matter.
    const page = await browser.submit(signIn, '/oauth/grants/sign-in', { organization: `  ${organizationName.toUpperCase()} `, email: user.email, password: user.password });
    expect(page.status).toBe(200);
    expect(page.html).toContain(crm.registered.name);
    expect(page.html).toContain('See your workflows');

    // Revoking asks first, on a page of its own; nothing is revoked until its form is sent.
    const confirm = await browser.open(`/oauth/grants/revoke?client_id=${crm.registered.client_id}`);
    expect(confirm.status).toBe(200);
    expect(confirm.html).toContain(`Revoke access for ${crm.registered.name}?`);
    expect((await workflows(crm.tokens.access_token)).status).toBe(200);
    const after = await browser.submit(confirm, '/oauth/grants/revoke');
    expect(after.status).toBe(200);
    expect(after.html).toContain(`${crm.registered.name} can no longer access your organization.`);
    expect(after.html).toContain('You have not allowed any application');
    expect((await refresh(crm)).status).toBe(400);
    await afterCacheTtl();
    expect((await workflows(crm.tokens.access_token)).status).toBe(401);

    const signedOut = await browser.submit(after, '/oauth/grants/sign-out');
    expect(signedOut.html).toContain('Sign in to see the applications');
  });

  it('the page refuses forged forms (403) and shows nothing without a session', async () => {
    const user = await createUser(t, admin, 'read');
    const crm = await approve(user, 'workflows:read');
    const browser = new FormBrowser(t.config.BASE_URL);
    const signIn = await browser.open('/oauth/grants');
    const forge = (html: string) => html.replace(/name="csrf" value="[^"]*"/g, 'name="csrf" value="forged"');
    const forgedSignIn = await browser.submit({ ...signIn, html: forge(signIn.html) }, '/oauth/grants/sign-in', { organization: organizationName, email: user.email, password: user.password });
    expect(forgedSignIn.status).toBe(403);
    const page = await browser.submit(signIn, '/oauth/grants/sign-in', { organization: organizationName, email: user.email, password: user.password });
    expect(page.html).toContain(crm.registered.name);
    const confirm = await browser.open(`/oauth/grants/revoke?client_id=${crm.registered.client_id}`);
    const forgedRevoke = await browser.submit({ ...confirm, html: forge(confirm.html) }, '/oauth/grants/revoke');
    expect(forgedRevoke.status).toBe(403);
    // Another browser (no session cookie) replaying the page's real form is refused too.
    const stranger = new FormBrowser(t.config.BASE_URL);
    expect((await stranger.submit(confirm, '/oauth/grants/revoke')).status).toBe(403);
    expect((await workflows(crm.tokens.access_token)).status).toBe(200);
    expect(page.html).not.toContain(crm.tokens.access_token);

    // A new password ends the page's sessions.
    await t.request.put(`/v1/users/${user.id}`).set(bearer(admin)).send({ password: 'another long passphrase' }).expect(200);
    expect((await browser.open('/oauth/grants')).html).toContain('Sign in to see the applications');
  });
});
