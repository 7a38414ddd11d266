/**
 * A real Chromium (Debian's package, driven by playwright-core) goes through the sign-in
 * and consent pages with JavaScript disabled and a phone-sized window: it signs in by the
 * field labels, approves and is redirected to the client with a code that openid-client
 * exchanges; a second run denies and the client gets error=access_denied; a third opens
 * the connected-applications page from the consent (a new tab, no second sign-in),
 * approves, then revokes the app behind its confirmation step. A fourth uses "Not you?" to
 * sign in as another person, after a wrong password.
 *
 * Every page is checked by axe-core (WCAG 2.x A/AA rules and best practices) in Chromium:
 * no serious or critical violation. axe runs on a copy of the page in a JavaScript-enabled
 * tab, since the pages themselves run without JavaScript and forbid scripts (CSP).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as oauth from 'openid-client';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { createClient, createUser } from '../helpers/oauth';

// Chromium and axe on a shared two-core machine: the flows take tens of seconds.
jest.setTimeout(180_000);

const REDIRECT = 'https://client.example/callback';
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const PHONE = { width: 360, height: 740 };

/** WCAG contrast ratio of an `rgb(r, g, b)` colour against white. */
function contrastWithWhite(rgb: string): number {
  const [r, g, b] = rgb.match(/\d+(\.\d+)?/g)!.slice(0, 3).map((c) => {
    const v = Number(c) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  });
  return 1.05 / (0.2126 * r! + 0.7152 * g! + 0.0722 * b! + 0.05);
}

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
  let axeTab: BrowserContext;
  /** Every page seen, by name, with axe's serious and critical violations on it. */
  const audited = new Map<string, unknown[]>();

  beforeAll(async () => {
    t = await createTestApp();
    admin = (await t.createKey('admin')).key;
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
    axeTab = await browser.newContext({ viewport: PHONE });
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
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: PHONE });
    const page = await context.newPage();
    // The client's redirect URI is not a real site: answer it in the browser (any tab) and keep the URL.
    await context.route('https://client.example/**', (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'client callback' }));
    return { user, registered, config, verifier, state, url, page, context };
  }

  /** Runs axe-core on a copy of the page as it is now, and records its serious and critical violations under `name`. */
  async function audit(page: Page, name: string) {
    const copy = await axeTab.newPage();
    try {
      await copy.setContent(await page.content());
      await copy.addScriptTag({ content: AXE_SOURCE });
      const violations = await copy.evaluate(`axe.run(document).then((r) => r.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) })))`);
      audited.set(name, violations as unknown[]);
    } finally {
      await copy.close();
    }
  }

  /** A computed style of the first element matching a CSS selector (a string: the test's TypeScript has no DOM types). */
  const style = (page: Page, selector: string, property: string) => page.evaluate(`getComputedStyle(document.querySelector(${JSON.stringify(selector)})).${property}`) as Promise<string>;

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
    await audit(s.page, 'sign-in');

    await signIn(s.page, s.user);
    await audit(s.page, 'consent');
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

  it('opens the connected applications from the consent without a second sign-in, approves, and revokes behind a confirmation', async () => {
    const s = await start();
    await s.page.goto(s.url.href);
    await signIn(s.page, s.user);
    // The consent's link opens in a new tab, already signed in (the consent's session is shared).
    const link = s.page.getByRole('link', { name: 'your connected applications' });
    expect(await link.getAttribute('target')).toBe('_blank');
    const grantsUrl = new URL((await link.getAttribute('href'))!, t.config.BASE_URL).href;
    const peek = await s.context.newPage();
    await peek.goto(grantsUrl);
    await peek.getByRole('heading', { name: 'Connected applications' }).waitFor();
    expect(await peek.getByText(`Signed in as ${s.user.email}`).isVisible()).toBe(true);
    expect(await peek.getByText('You have not allowed any application').isVisible()).toBe(true);
    await peek.close();
    // The consent stays where it was.
    await s.page.getByRole('button', { name: 'Approve' }).click();
    await s.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const tokens = await oauth.authorizationCodeGrant(s.config, new URL(s.page.url()), { pkceCodeVerifier: s.verifier, expectedState: s.state });
    expect((await t.request.get('/v1/workflows').set(bearer(tokens.access_token))).status).toBe(200);

    const grantsTab = await s.context.newPage();
    await grantsTab.goto(grantsUrl);
    await grantsTab.getByRole('heading', { name: s.registered.name }).waitFor();
    expect(await grantsTab.getByText('Create and change workflows').isVisible()).toBe(true);
    expect(await fitsThePhone(grantsTab)).toBe(true);
    await audit(grantsTab, 'connected applications');
    // Revoking is red, unlike signing out, and asks first.
    const revokeButton = `button[aria-label="Revoke access for ${s.registered.name}"]`;
    expect(await style(grantsTab, revokeButton, 'color')).toBe('rgb(185, 28, 28)');
    expect(await style(grantsTab, 'form[action="/oauth/grants/sign-out"] button', 'color')).toBe('rgb(29, 78, 216)');
    await grantsTab.getByRole('button', { name: `Revoke access for ${s.registered.name}` }).click();
    await grantsTab.getByRole('heading', { name: `Revoke access for ${s.registered.name}?` }).waitFor();
    await audit(grantsTab, 'revoke confirmation');
    expect((await t.request.get('/v1/workflows').set(bearer(tokens.access_token))).status).toBe(200);
    expect(await style(grantsTab, 'button.danger', 'backgroundColor')).toBe('rgb(185, 28, 28)');
    await grantsTab.getByRole('button', { name: 'Revoke access' }).click();
    await grantsTab.getByText(`${s.registered.name} can no longer access your organization.`).waitFor();
    expect(await grantsTab.getByRole('heading', { name: s.registered.name }).count()).toBe(0);
    await audit(grantsTab, 'connected applications after revoking');
    await new Promise((r) => setTimeout(r, t.config.AUTH_CACHE_TTL_MS + 50));
    const refused = await t.request.get('/v1/workflows').set(bearer(tokens.access_token));
    expect([refused.status, refused.body.error.code]).toEqual([401, 'INVALID_TOKEN']);
    await expect(oauth.refreshTokenGrant(s.config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

    // Signed out, the page asks for the organization (matched as emails are) and says what to type.
    await grantsTab.getByRole('button', { name: 'Sign out' }).click();
    await grantsTab.getByLabel('Organization').waitFor();
    await audit(grantsTab, 'connected applications sign-in');
    expect(await grantsTab.getByLabel('Organization').getAttribute('aria-describedby')).toBe('organization-hint');
    expect(await grantsTab.locator('#organization-hint').textContent()).toContain('Capitals and spaces around it do not matter');
    const [org] = await t.query<{ name: string }>('select o.name from organizations o join users u on u.organization_id = o.id where u.id = ?', [s.user.id]);
    await grantsTab.getByLabel('Organization').fill(` ${org!.name.toUpperCase()}  `);
    await grantsTab.getByLabel('Email').fill(s.user.email);
    await grantsTab.getByLabel('Password').fill('not the password');
    await grantsTab.getByRole('button', { name: 'Sign in' }).click();
    await grantsTab.getByRole('alert').waitFor();
    await audit(grantsTab, 'connected applications sign-in error');
    expect(await grantsTab.evaluate('document.activeElement.id')).toBe('password');
    await grantsTab.getByLabel('Password').fill(s.user.password);
    await grantsTab.getByRole('button', { name: 'Sign in' }).click();
    await grantsTab.getByText(`Signed in as ${s.user.email}`).waitFor();
  });

  it('after a wrong password focuses the password with the error tied to it; "Not you?" signs in another person', async () => {
    const s = await start();
    const other = await createUser(t, admin, 'read_write');
    await s.page.goto(s.url.href);
    await s.page.getByLabel('Email').fill(s.user.email);
    await s.page.getByLabel('Password').fill('not the password');
    await s.page.getByRole('button', { name: 'Sign in' }).click();
    await s.page.getByRole('alert').waitFor();
    await audit(s.page, 'sign-in error');
    expect(await s.page.evaluate('document.activeElement.id')).toBe('password');
    for (const field of ['Email', 'Password']) {
      expect(await s.page.getByLabel(field).getAttribute('aria-describedby')).toBe('form-error');
      expect(await s.page.getByLabel(field).getAttribute('aria-invalid')).toBe('true');
    }
    expect(await s.page.locator('#form-error').textContent()).toBe('The email or password is incorrect.');
    // The focus ring reads against white (WCAG 1.4.11: 3:1).
    expect(contrastWithWhite(await style(s.page, '#password', 'outlineColor'))).toBeGreaterThanOrEqual(3);
    expect(await style(s.page, '#password', 'outlineStyle')).toBe('solid');

    await s.page.getByLabel('Password').fill(s.user.password);
    await s.page.getByRole('button', { name: 'Sign in' }).click();
    await s.page.getByRole('heading', { name: /^Allow / }).waitFor();
    const [org] = await t.query<{ name: string }>('select o.name from organizations o join users u on u.organization_id = o.id where u.id = ?', [s.user.id]);
    expect(await s.page.getByText(`Signed in to ${org!.name} as ${s.user.email}.`).isVisible()).toBe(true);

    await s.page.getByRole('button', { name: 'Not you? Use another account' }).click();
    await s.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await s.page.getByLabel('Email').fill(other.email);
    await s.page.getByLabel('Password').fill(other.password);
    await s.page.getByRole('button', { name: 'Sign in' }).click();
    await s.page.getByRole('heading', { name: /^Allow / }).waitFor();
    expect(await s.page.getByText(`as ${other.email}`).isVisible()).toBe(true);
    await s.page.getByRole('button', { name: 'Approve' }).click();
    await s.page.waitForURL((u) => u.href.startsWith(REDIRECT));
    const tokens = await oauth.authorizationCodeGrant(s.config, new URL(s.page.url()), { pkceCodeVerifier: s.verifier, expectedState: s.state });
    const me = await t.request.get('/v1/me').set(bearer(tokens.access_token));
    expect(me.body.data.user_id).toBe(other.id);
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

  it('the error page passes too, and every page seen has no serious or critical accessibility violation', async () => {
    const page = await browser.newPage({ javaScriptEnabled: false, viewport: PHONE });
    await page.goto(new URL('/oauth/interaction/no-such-uid', t.config.BASE_URL).href);
    await page.getByRole('heading', { name: 'Something went wrong' }).waitFor();
    await audit(page, 'error');
    await page.close();
    expect([...audited.keys()].sort()).toEqual(
      [
        'connected applications',
        'connected applications after revoking',
        'connected applications sign-in',
        'connected applications sign-in error',
        'consent',
        'error',
        'revoke confirmation',
        'sign-in',
        'sign-in error',
      ].sort(),
    );
    expect(Object.fromEntries(audited)).toEqual(Object.fromEntries([...audited.keys()].map((k) => [k, []])));
  });
});
