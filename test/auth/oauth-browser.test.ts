/**
 * A real Chromium (Debian's package, driven by playwright-core) goes through the sign-in
 * and consent pages with JavaScript disabled and a phone-sized window: it signs in by the
 * field labels, approves and is redirected to the client with a code that openid-client
 * exchanges; a second run denies and the client gets error=access_denied; a third
 * approves, then revokes the app on the connected-applications page.
 */
import { execFileSync } from 'node:child_process';
import * as oauth from 'openid-client';
import { type Browser, chromium, type Page } from 'playwright-core';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { createClient, createUser } from '../helpers/oauth';

const REDIRECT = 'https://client.example/callback';

function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('Chromium is required for this test: apt-get install -y chromium (.ci/run does it), or set CHROMIUM_PATH');
  }
}

describe('OAuth pages in a real browser', () => {
  let t: TestApp;
  let admin: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    admin = (await t.createKey('admin')).key;
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  async function start(role: 'read' | 'read_write' = 'read_write') {
    const user = await createUser(t, admin, role);
    const registered = await createClient(t, admin, { type: 'public', scopes: ['workflows:read', 'workflows:write'] });
    const config = await oauth.discovery(new URL(t.config.BASE_URL), registered.client_id, undefined, oauth.None(), {
      algorithm: 'oauth2',
      execute: [oauth.allowInsecureRequests],
    });
    const verifier = oauth.randomPKCECodeVerifier();
    const state = oauth.randomState();
    const url = oauth.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'workflows:read workflows:write',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 360, height: 740 } });
    const page = await context.newPage();
    // The client's redirect URI is not a real site: answer it in the browser and keep the URL.
    await page.route('https://client.example/**', (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'client callback' }));
    return { user, registered, config, verifier, state, url, page };
  }

  async function signIn(page: Page, user: { email: string; password: string }) {
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /^Allow / }).waitFor();
  }

  /** No sideways scrolling on a 360 px wide screen (a string: the test's TypeScript has no DOM types). */
  const fitsThePhone = (page: Page) => page.evaluate('document.documentElement.scrollWidth <= window.innerWidth');

  it('signs in, approves and is redirected with a code that yields working tokens', async () => {
    const s = await start();
    await s.page.goto(s.url.href);
    await s.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(await s.page.getByText(s.registered.name).first().isVisible()).toBe(true);
    expect(await fitsThePhone(s.page)).toBe(true);

    await signIn(s.page, s.user);
    expect(await s.page.getByText('See your workflows').isVisible()).toBe(true);
    expect(await s.page.getByText('Create and change workflows').isVisible()).toBe(true);
    expect(await fitsThePhone(s.page)).toBe(true);

    await s.page.getByRole('button', { name: 'Approve' }).click();
    await s.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const callback = new URL(s.page.url());
    expect(callback.searchParams.get('state')).toBe(s.state);
    expect(callback.searchParams.get('code')).toEqual(expect.any(String));

    const tokens = await oauth.authorizationCodeGrant(s.config, callback, { pkceCodeVerifier: s.verifier, expectedState: s.state });
    const me = await t.request.get('/v1/me').set(bearer(tokens.access_token));
    expect(me.body.data).toMatchObject({ credential_type: 'oauth', user_id: s.user.id, scopes: ['workflows:read', 'workflows:write'] });
  });

  it('lists the approved app on the connected-applications page, linked from consent, and revokes it', async () => {
    const s = await start();
    await s.page.goto(s.url.href);
    await signIn(s.page, s.user);
    const link = s.page.getByRole('link', { name: 'your connected applications' });
    const grantsUrl = new URL((await link.getAttribute('href'))!, t.config.BASE_URL).href;
    await s.page.getByRole('button', { name: 'Approve' }).click();
    await s.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const tokens = await oauth.authorizationCodeGrant(s.config, new URL(s.page.url()), { pkceCodeVerifier: s.verifier, expectedState: s.state });
    expect((await t.request.get('/v1/workflows').set(bearer(tokens.access_token))).status).toBe(200);

    // The consent page's link fills in the organization; the person signs in by the labels.
    await s.page.goto(grantsUrl);
    await s.page.getByRole('heading', { name: 'Connected applications' }).waitFor();
    expect(await s.page.getByLabel('Organization').inputValue()).not.toBe('');
    await s.page.getByLabel('Email').fill(s.user.email);
    await s.page.getByLabel('Password').fill(s.user.password);
    await s.page.getByRole('button', { name: 'Sign in' }).click();
    await s.page.getByRole('heading', { name: s.registered.name }).waitFor();
    expect(await s.page.getByText('Create and change workflows').isVisible()).toBe(true);
    expect(await fitsThePhone(s.page)).toBe(true);

    await s.page.getByRole('button', { name: `Revoke access for ${s.registered.name}` }).click();
    await s.page.getByText(`${s.registered.name} can no longer access your organization.`).waitFor();
    expect(await s.page.getByRole('heading', { name: s.registered.name }).count()).toBe(0);
    await new Promise((r) => setTimeout(r, t.config.AUTH_CACHE_TTL_MS + 50));
    const refused = await t.request.get('/v1/workflows').set(bearer(tokens.access_token));
    expect([refused.status, refused.body.error.code]).toEqual([401, 'INVALID_TOKEN']);
    await expect(oauth.refreshTokenGrant(s.config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('denies, and the client gets error=access_denied', async () => {
    const s = await start();
    await s.page.goto(s.url.href);
    await signIn(s.page, s.user);
    await s.page.getByRole('button', { name: 'Deny' }).click();
    await s.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const callback = new URL(s.page.url());
    expect(callback.searchParams.get('error')).toBe('access_denied');
    expect(callback.searchParams.get('state')).toBe(s.state);
    expect(callback.searchParams.get('code')).toBeNull();
  });
});
