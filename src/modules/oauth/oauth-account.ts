/**
 * Owns the signed-in page where a person sees the applications they approved and revokes
 * one: `/oauth/grants`. Plain HTML forms, no JavaScript, like the consent pages.
 *
 * - Sign-in: organization (by name, trimmed and case-insensitive as emails are: emails are
 *   unique per organization only), email and password, with the consent page's rules (same
 *   answer for an unknown email or a wrong password, the same per-email and per-IP attempt
 *   limits). Signing in on a consent page signs in here too.
 * - Session: oauth-grants-session.ts.
 * - Revoking asks first: the grant's "Revoke access" opens a confirmation page
 *   (`GET /oauth/grants/revoke?client_id=`) whose form revokes.
 * - CSRF: every form carries HMAC(server key, session id); before sign-in, the session id
 *   is a random nonce in a cookie of its own. A cross-site post has neither.
 */
import { randomBytes } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import { koaBody } from 'koa-body';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { OAuthServer } from './oauth-provider';
import type { OAuthServices } from './oauth-state';
import { Organization } from '../organizations/organization.entity';
import { UserService } from '../users/user.service';
import { OAuthClient } from './oauth-client.entity';
import { GRANTS_PATH as PATH, GrantsSessions, SESSION_TTL_S } from './oauth-grants-session';
import { PAGE_HEADERS, signInLimitChecks } from './oauth-interactions';
import { renderAccountSignInPage, renderErrorPage, renderGrantsPage, renderRevokePage } from './oauth-pages';

const NONCE_COOKIE = 'wfa_grants_nonce';
const SIGN_IN_FAILED = 'The organization, email or password is incorrect.';

/**
 * The organization a person typed, matched as emails are: trimmed and case-insensitive.
 * Names are unique as written, so two may differ only in case: then only the exact one matches.
 */
async function organizationNamed(em: EntityManager, typed: string): Promise<Organization | null> {
  if (!typed) return null;
  const rows = await em.execute<Array<{ id: string; name: string }>>('select id, name from organizations where lower(name) = lower(?) limit 10', [typed]);
  const match = rows.length === 1 ? rows[0] : rows.find((r) => r.name === typed);
  return match ? await em.findOne(Organization, { id: match.id }) : null;
}

export function accountRouter(services: OAuthServices, server: OAuthServer): Router {
  const sessions = new GrantsSessions(services, server.cookieKey);
  const mac = (purpose: string, value: string) => sessions.mac(purpose, value);

  function signInPage(ctx: Context, extra: { organizationName?: string; email?: string; error?: string } = {}) {
    let nonce = ctx.cookies.get(NONCE_COOKIE);
    if (!nonce || !/^[\w-]{32}$/.test(nonce)) {
      nonce = randomBytes(24).toString('base64url');
      sessions.setCookie(ctx, NONCE_COOKIE, nonce, SESSION_TTL_S);
    }
    ctx.type = 'html';
    ctx.body = renderAccountSignInPage({ csrf: mac('grants-signin', nonce), ...extra });
  }

  function checkCsrf(ctx: Context, boundTo: string | undefined, purpose: string) {
    const given = String((ctx.request.body as Record<string, unknown> | undefined)?.csrf ?? '');
    if (!boundTo || !sessions.sameMac(given, mac(purpose, boundTo))) {
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
    const signedIn = await sessions.signedIn(ctx);
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
    const org = await organizationNamed(services.orm.em.fork() as EntityManager, organizationName);
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
    sessions.open(ctx, user);
    services.logger.info({ sub: user.id }, 'grants page sign-in');
    ctx.status = 303;
    ctx.redirect(PATH);
  });

  // The confirmation step: what revoking takes away, and the one button that does it.
  router.get('/revoke', async (ctx) => {
    const signedIn = await sessions.signedIn(ctx);
    if (!signedIn) return signInPage(ctx);
    const clientId = typeof ctx.query.client_id === 'string' ? ctx.query.client_id.slice(0, 64) : '';
    const grant = (await services.oauthGrants.list(signedIn.user.id)).find((g) => g.clientId === clientId);
    if (!grant) {
      ctx.status = 303;
      return ctx.redirect(PATH);
    }
    ctx.type = 'html';
    ctx.body = renderRevokePage({ csrf: mac('grants-form', signedIn.session.s), grant });
  });

  router.post('/revoke', form, async (ctx) => {
    const signedIn = await sessions.signedIn(ctx);
    if (!checkCsrf(ctx, signedIn?.session.s, 'grants-form')) return;
    const clientId = String((ctx.request.body as Record<string, unknown>).client_id ?? '').slice(0, 64);
    const revoked = await services.oauthGrants.revoke(signedIn!.user.id, clientId);
    services.logger.info({ sub: signedIn!.user.id, client_id: clientId, grants: revoked }, 'oauth grant revoked by its user');
    ctx.status = 303;
    ctx.redirect(revoked ? `${PATH}?revoked=${encodeURIComponent(clientId)}` : PATH);
  });

  router.post('/sign-out', form, async (ctx) => {
    const signedIn = await sessions.signedIn(ctx);
    if (!checkCsrf(ctx, signedIn?.session.s, 'grants-form')) return;
    sessions.close(ctx);
    ctx.status = 303;
    ctx.redirect(PATH);
  });

  return router;
}
