/**
 * Owns the signed-in page where a person sees the applications they approved and revokes
 * one: `/oauth/grants`. Plain HTML forms, no JavaScript, like the consent pages.
 *
 * - Sign-in: organization (by name: emails are unique per organization only), email and
 *   password, with the consent page's rules (same answer for an unknown email or a wrong
 *   password, the same per-email and per-IP attempt limits).
 * - Session: a cookie holding the user id, a random session id and an expiry (1 h),
 *   signed with HMAC under the server's cookie key; HttpOnly, SameSite=Lax, scoped to
 *   /oauth/grants, Secure when the service is served over HTTPS. It also carries a
 *   fingerprint of the password hash, so changing the password ends every session; a
 *   deleted user is signed out.
 * - CSRF: every form carries HMAC(server key, session id); before sign-in, the session id
 *   is a random nonce in a cookie of its own. A cross-site post has neither.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import { koaBody } from 'koa-body';
import type { OAuthServer } from './oauth-provider';
import type { OAuthServices } from './oauth-state';
import { Organization } from '../organizations/organization.entity';
import { User } from '../users/user.entity';
import { UserService } from '../users/user.service';
import { OAuthClient } from './oauth-client.entity';
import { PAGE_HEADERS, signInLimitChecks } from './oauth-interactions';
import { renderAccountSignInPage, renderErrorPage, renderGrantsPage } from './oauth-pages';

const PATH = '/oauth/grants';
const SESSION_COOKIE = 'wfa_grants_session';
const NONCE_COOKIE = 'wfa_grants_nonce';
const SESSION_TTL_S = 3600;
const SIGN_IN_FAILED = 'The organization, email or password is incorrect.';

interface Session {
  /** User id. */
  u: string;
  /** Session id: what the forms' CSRF tokens are bound to. */
  s: string;
  /** Expiry, Unix seconds. */
  e: number;
  /** Fingerprint of the password hash: a new password ends the session. */
  p: string;
}

export function accountRouter(services: OAuthServices, server: OAuthServer): Router {
  const key = server.cookieKey;
  const secure = services.config.BASE_URL.startsWith('https:');
  const mac = (purpose: string, value: string) => createHmac('sha256', key).update(`${purpose}:${value}`).digest('base64url');
  const sameMac = (given: string, expected: string) => {
    const a = Buffer.from(given);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  };
  const passwordPrint = (user: User) => mac('grants-password', user.passwordHash).slice(0, 16);

  // Set by hand: Koa's cookies refuse a Secure cookie on a plain connection (TLS ended at a proxy).
  const setCookie = (ctx: Context, name: string, value: string, maxAgeS: number) =>
    ctx.append('Set-Cookie', `${name}=${value}; Path=${PATH}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`);

  function readSession(ctx: Context): Session | null {
    const raw = ctx.cookies.get(SESSION_COOKIE);
    if (!raw) return null;
    const [body, sig] = raw.split('.');
    if (!body || !sig || !sameMac(sig, mac('grants-session', body))) return null;
    try {
      const session = JSON.parse(Buffer.from(body, 'base64url').toString()) as Session;
      return session.e * 1000 > Date.now() ? session : null;
    } catch {
      return null;
    }
  }

  async function signedInUser(ctx: Context): Promise<{ user: User; session: Session } | null> {
    const session = readSession(ctx);
    if (!session) return null;
    const user = await services.orm.em.fork().findOne(User, { id: session.u });
    return user && sameMac(session.p, passwordPrint(user)) ? { user, session } : null;
  }

  function signInPage(ctx: Context, extra: { organizationName?: string; email?: string; error?: string } = {}) {
    let nonce = ctx.cookies.get(NONCE_COOKIE);
    if (!nonce || !/^[\w-]{32}$/.test(nonce)) {
      nonce = randomBytes(24).toString('base64url');
      setCookie(ctx, NONCE_COOKIE, nonce, SESSION_TTL_S);
    }
    ctx.type = 'html';
    ctx.body = renderAccountSignInPage({ csrf: mac('grants-signin', nonce), ...extra });
  }

  function checkCsrf(ctx: Context, boundTo: string | undefined, purpose: string) {
    const given = String((ctx.request.body as Record<string, unknown> | undefined)?.csrf ?? '');
    if (!boundTo || !sameMac(given, mac(purpose, boundTo))) {
      ctx.status = 403;
      ctx.type = 'html';
      ctx.body = renderErrorPage('invalid_request', 'The form was not submitted from this page. Go back and try again.');
      return false;
    }
    return true;
  }

  const router = new Router({ prefix: PATH });
  const form = koaBody({ json: false, urlencoded: true, multipart: false, text: false, formLimit: '16kb' });
  router.use(async (ctx, next) => {
    ctx.set(PAGE_HEADERS);
    await next();
  });

  router.get('/', async (ctx) => {
    const signedIn = await signedInUser(ctx);
    if (!signedIn) return signInPage(ctx, { organizationName: String(ctx.query.organization ?? '').slice(0, 200) });
    const { user, session } = signedIn;
    let notice: string | undefined;
    const revoked = typeof ctx.query.revoked === 'string' ? ctx.query.revoked.slice(0, 64) : '';
    if (revoked) {
      const client = await services.orm.em.fork().findOne(OAuthClient, { id: revoked, organizationId: user.organizationId });
      if (client) notice = `${client.name} can no longer access your organization.`;
    }
    const grants = await services.oauthGrants.list(user.id);
    ctx.type = 'html';
    ctx.body = renderGrantsPage({ csrf: mac('grants-form', session.s), email: user.email, grants, ...(notice ? { notice } : {}) });
  });

  router.post('/sign-in', form, async (ctx) => {
    if (!checkCsrf(ctx, ctx.cookies.get(NONCE_COOKIE), 'grants-signin')) return;
    const body = ctx.request.body as Record<string, unknown>;
    const organizationName = String(body.organization ?? '').trim().slice(0, 200);
    const email = String(body.email ?? '').trim().toLowerCase().slice(0, 320);
    const password = String(body.password ?? '').slice(0, 1024);
    const org = organizationName ? await services.orm.em.fork().findOne(Organization, { name: organizationName }) : null;
    const limit = await services.rateLimiter.check(signInLimitChecks(services, org?.id ?? '-', email, ctx.ip));
    if (!limit.allowed) {
      ctx.status = 429;
      ctx.set('Retry-After', String(limit.retryAfterSeconds));
      return signInPage(ctx, { organizationName, email, error: `Too many sign-in attempts. Try again in ${Math.ceil(limit.retryAfterSeconds / 60)} minutes.` });
    }
    // An unknown organization costs the same scrypt work as a wrong password (no user has the id '').
    const user = email && password ? await new UserService(services.orm.em.fork()).authenticate(org?.id ?? '', email, password) : null;
    if (!user) {
      ctx.status = 401;
      return signInPage(ctx, { organizationName, email, error: SIGN_IN_FAILED });
    }
    const session: Session = { u: user.id, s: randomBytes(16).toString('base64url'), e: Math.floor(Date.now() / 1000) + SESSION_TTL_S, p: passwordPrint(user) };
    const value = Buffer.from(JSON.stringify(session)).toString('base64url');
    setCookie(ctx, SESSION_COOKIE, `${value}.${mac('grants-session', value)}`, SESSION_TTL_S);
    services.logger.info({ sub: user.id }, 'grants page sign-in');
    ctx.status = 303;
    ctx.redirect(PATH);
  });

  router.post('/revoke', form, async (ctx) => {
    const signedIn = await signedInUser(ctx);
    if (!checkCsrf(ctx, signedIn?.session.s, 'grants-form')) return;
    const clientId = String((ctx.request.body as Record<string, unknown>).client_id ?? '').slice(0, 64);
    const revoked = await services.oauthGrants.revoke(signedIn!.user.id, clientId);
    services.logger.info({ sub: signedIn!.user.id, client_id: clientId, grants: revoked }, 'oauth grant revoked by its user');
    ctx.status = 303;
    ctx.redirect(revoked ? `${PATH}?revoked=${encodeURIComponent(clientId)}` : PATH);
  });

  router.post('/sign-out', form, async (ctx) => {
    const signedIn = await signedInUser(ctx);
    if (!checkCsrf(ctx, signedIn?.session.s, 'grants-form')) return;
    setCookie(ctx, SESSION_COOKIE, '', 0);
    ctx.status = 303;
    ctx.redirect(PATH);
  });

  return router;
}
