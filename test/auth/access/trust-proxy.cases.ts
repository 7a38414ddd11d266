/**
 * The per-IP sign-in limit counts the client's real address: X-Forwarded-For is believed
 * only from the proxies TRUST_PROXY names (default: none), so rotating the header does not
 * escape the limit, while behind a configured proxy each forwarded client counts on its own.
 */
import * as oauth from 'openid-client';
import { createTestApp, type TestApp } from '../../helpers/app';
import { createClient, FormBrowser } from '../../helpers/oauth';

describe('TRUST_PROXY and the per-IP sign-in limit', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = (await t.createKey('admin')).key;
  });
  afterAll(() => t.close());

  /** Another API process on the same database with these settings and two sign-in attempts per IP; runs `fn` on it. */
  async function withApp(env: Record<string, string>, fn: (app: TestApp, attempt: (forwardedFor?: string) => Promise<number>) => Promise<void>) {
    const app = await createTestApp({ DATABASE_URL: t.databaseUrl, SIGNIN_ATTEMPTS_PER_IP: '2', ...env });
    try {
      const registered = await createClient(t, admin, { type: 'confidential', scopes: ['workflows:read'] });
      const config = await oauth.discovery(new URL(app.config.BASE_URL), registered.client_id, undefined, oauth.ClientSecretPost(registered.client_secret!), {
        algorithm: 'oauth2',
        execute: [oauth.allowInsecureRequests],
      });
      const browser = new FormBrowser(app.config.BASE_URL);
      const page = await browser.open(oauth.buildAuthorizationUrl(config, { redirect_uri: 'https://client.example/callback', scope: 'workflows:read', state: 's' }).href);
      let n = 0;
      const attempt = async (forwardedFor?: string) => {
        browser.headers = forwardedFor ? { 'x-forwarded-for': forwardedFor } : {};
        return (await browser.submit(page, '/login', { email: `someone-${n++}@example.com`, password: 'wrong password' })).status;
      };
      await fn(app, attempt);
    } finally {
      await app.close();
    }
  }

  it('by default trusts no proxy: a rotated X-Forwarded-For does not escape the limit', async () => {
    await withApp({}, async (_app, attempt) => {
      expect([await attempt('203.0.113.1'), await attempt('203.0.113.2'), await attempt('203.0.113.3')]).toEqual([401, 401, 429]);
    });
  });

  it('ignores X-Forwarded-For from a peer that is not a named proxy', async () => {
    await withApp({ TRUST_PROXY: '10.0.0.0/8' }, async (_app, attempt) => {
      expect([await attempt('203.0.113.1'), await attempt('203.0.113.2'), await attempt('203.0.113.3')]).toEqual([401, 401, 429]);
    });
  });

  it('behind a named proxy, counts the forwarded client address; a client-written entry left of it changes nothing', async () => {
    await withApp({ TRUST_PROXY: 'loopback' }, async (_app, attempt) => {
      expect([await attempt('203.0.113.1'), await attempt('203.0.113.1')]).toEqual([401, 401]);
      // Another client behind the same proxy has its own budget.
      expect(await attempt('203.0.113.2')).toBe(401);
      // 203.0.113.1 again, with a forged address it wrote in front: still 203.0.113.1.
      expect(await attempt('198.51.100.66, 203.0.113.1')).toBe(429);
    });
  });

  it('with a hop count, counts the address the last proxy appended', async () => {
    await withApp({ TRUST_PROXY: '1' }, async (_app, attempt) => {
      expect([await attempt('198.51.100.1, 203.0.113.1'), await attempt('198.51.100.2, 203.0.113.1'), await attempt('198.51.100.3, 203.0.113.1')]).toEqual([401, 401, 429]);
    });
  });
});
