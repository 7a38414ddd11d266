/**
 * Owns the sign-in and consent steps of the authorization server (its "interactions"):
 * `/oauth/interaction/:uid` renders the page the provider asks for, and its forms post to
 * `/login`, `/confirm` and `/abort`.
 *
 * - CSRF: every form carries HMAC(server key, uid); the provider also binds the uid to
 *   the browser with its own SameSite cookie, so a cross-site post has neither.
 * - Sign-in looks the email up in the client's organization only; a wrong email and a
 *   wrong password get the same answer after the same scrypt work. Attempts are limited
 *   per email and per IP.
 * - Consent grants requested ∩ client's ∩ the user's role; Deny answers access_denied.
 *   The consent page opens the connected-applications session (oauth-grants-session.ts) for
 *   its person, and offers "Use another account" (a form: it ends the provider's session
 *   server-side, then restarts the same authorization request, which asks for a sign-in;
 *   the provider's own logout page needs JavaScript).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Context } from 'koa';
import { koaBody } from 'koa-body';
import type { Interaction } from 'oidc-provider';
import { PERMISSION_SCOPES, SCOPES, type Scope } from '../../credentials/scopes';
import type { LimitCheck, LimitRule } from '../../http/rate-limit';
import type { Services } from '../../services';
import type { OAuthServer } from './oauth-provider';
import type { OAuthServices } from './oauth-state';
import { Organization } from '../organizations/organization.entity';
import { User } from '../users/user.entity';
import { UserService } from '../users/user.service';
import { OAuthClient } from './oauth-client.entity';
import { GrantsSessions } from './oauth-grants-session';
import { renderConsentPage, renderErrorPage, renderSignInPage } from './oauth-pages';

const FIFTEEN_MINUTES = 15 * 60_000;
const SIGN_IN_FAILED = 'The email or password is incorrect.';

class PageError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Sign-in attempts per email (of one organization) and per client IP: shared by every sign-in form. */
export function signInLimitChecks(services: Services, organizationId: string, email: string, ip: string): LimitCheck[] {
  const limits: Record<'email' | 'ip', LimitRule> = {
    email: { name: 'signin_email', limit: services.config.SIGNIN_ATTEMPTS_PER_EMAIL, windowMs: FIFTEEN_MINUTES },
    ip: { name: 'signin_ip', limit: services.config.SIGNIN_ATTEMPTS_PER_IP, windowMs: FIFTEEN_MINUTES },
  };
  return [
    { rule: limits.email, subject: `${organizationId}:${email}` },
    { rule: limits.ip, subject: ip },
  ];
}

/** The security headers of every OAuth page: never framed (clickjacking on a button), no script, never cached. */
export const PAGE_HEADERS = {
  'X-Frame-Options': 'DENY',
  'Content-Security-Policy': "frame-ancestors 'none'; default-src 'none'; style-src 'unsafe-inline'",
  'Cache-Control': 'no-store',
};

export function interactionRouter(services: OAuthServices, server: OAuthServer): Router {
  const { provider, resource, cookieKey } = server;
  const grantsSessions = new GrantsSessions(services, cookieKey);
  const csrfFor = (uid: string) => createHmac('sha256', cookieKey).update(`csrf:${uid}`).digest('base64url');

  const router = new Router({ prefix: '/oauth/interaction/:uid' });
  const form = koaBody({ json: false, urlencoded: true, multipart: false, text: false, formLimit: '16kb' });

  // Pages are HTML, never framed (clickjacking on Approve), never cached.
  router.use(async (ctx, next) => {
    ctx.set(PAGE_HEADERS);
    try {
      await next();
    } catch (err) {
      const status = err instanceof PageError ? err.status : 400;
      if (!(err instanceof PageError)) services.logger.info({ err: (err as Error).message }, 'oauth interaction refused');
      ctx.status = status;
      ctx.type = 'html';
      ctx.body = renderErrorPage('invalid_request', err instanceof PageError ? err.message : 'This sign-in link has expired or was opened in another browser. Start again from the application.');
    }
  });

  async function load(ctx: Context) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (details.uid !== ctx.params.uid) throw new PageError(400, 'This sign-in link does not match your browser session.');
    const client = await services.orm.em.fork().findOne(OAuthClient, { id: String(details.params.client_id) });
    if (!client) throw new PageError(400, 'This application is no longer registered.');
    return { details, client };
  }

  function checkCsrf(ctx: Context) {
    const given = Buffer.from(String((ctx.request.body as Record<string, unknown> | undefined)?.csrf ?? ''));
    const expected = Buffer.from(csrfFor(ctx.params.uid!));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new PageError(403, 'The form was not submitted from this page. Go back and try again.');
  }

  const finish = async (ctx: Context, result: Parameters<typeof provider.interactionResult>[2], merge = true) => {
    const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
    ctx.status = 303;
    ctx.redirect(to);
  };

  /** What the consent would grant: requested scopes this client may have, cut to the user's role. */
  function grantable(details: Interaction, user: User): { granted: Scope[]; refused: string[] } {
    const missing: string[] = (details.prompt.details.missingResourceScopes as Record<string, string[]> | undefined)?.[resource] ?? [];
    const role = PERMISSION_SCOPES[user.role];
    return { granted: SCOPES.filter((s) => missing.includes(s) && role.has(s)), refused: missing.filter((s) => !role.has(s as Scope)) };
  }

  async function consentUser(details: Interaction, client: OAuthClient): Promise<User> {
    const user = details.session?.accountId ? await services.orm.em.fork().findOne(User, { id: details.session.accountId }) : null;
    if (!user || user.organizationId !== client.organizationId) throw new PageError(400, 'Your session has ended. Start again from the application.');
    return user;
  }

  async function signInPage(ctx: Context, client: OAuthClient, extra: { email?: string; error?: string } = {}) {
    const org = await services.orm.em.fork().findOneOrFail(Organization, { id: client.organizationId });
    ctx.type = 'html';
    ctx.body = renderSignInPage({ uid: ctx.params.uid!, csrf: csrfFor(ctx.params.uid!), clientName: client.name, organizationName: org.name, ...extra });
  }

  router.get('/', async (ctx) => {
    const { details, client } = await load(ctx);
    if (details.prompt.name === 'login') return signInPage(ctx, client);
    if (details.prompt.name !== 'consent') throw new PageError(400, 'Unexpected step.');
    const user = await consentUser(details, client);
    const { granted } = grantable(details, user);
    if (granted.length === 0) {
      return finish(ctx, { error: 'invalid_scope', error_description: 'None of the requested scopes can be granted to this user' });
    }
    const org = await services.orm.em.fork().findOneOrFail(Organization, { id: client.organizationId });
    grantsSessions.open(ctx, user);
    ctx.type = 'html';
    ctx.body = renderConsentPage({
      uid: details.uid,
      csrf: csrfFor(details.uid),
      clientName: client.name,
      email: user.email,
      organizationName: org.name,
      scopes: granted,
    });
  });

  router.post('/login', form, async (ctx) => {
    checkCsrf(ctx);
    const { details, client } = await load(ctx);
    if (details.prompt.name !== 'login') throw new PageError(400, 'Unexpected step.');
    const body = ctx.request.body as Record<string, unknown>;
    const email = String(body.email ?? '').trim().toLowerCase().slice(0, 320);
    const password = String(body.password ?? '').slice(0, 1024);
    const limit = await services.rateLimiter.check(signInLimitChecks(services, client.organizationId, email, ctx.ip));
    if (!limit.allowed) {
      ctx.status = 429;
      ctx.set('Retry-After', String(limit.retryAfterSeconds));
      return signInPage(ctx, client, { email, error: `Too many sign-in attempts. Try again in ${Math.ceil(limit.retryAfterSeconds / 60)} minutes.` });
    }
    const user = email && password ? await new UserService(services.orm.em.fork()).authenticate(client.organizationId, email, password) : null;
    if (!user) {
      ctx.status = 401;
      return signInPage(ctx, client, { email, error: SIGN_IN_FAILED });
    }
    services.logger.info({ sub: user.id, client_id: client.id }, 'oauth sign-in');
    return finish(ctx, { login: { accountId: user.id } }, false);
  });

  router.post('/confirm', form, async (ctx) => {
    checkCsrf(ctx);
    const { details, client } = await load(ctx);
    if (details.prompt.name !== 'consent') throw new PageError(400, 'Unexpected step.');
    const user = await consentUser(details, client);
    const { granted, refused } = grantable(details, user);
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: user.id, clientId: client.id });
    if (!grant) throw new PageError(400, 'Your consent has expired. Start again from the application.');
    if (granted.length) grant.addResourceScope(resource, granted.join(' '));
    // Marking the role's excess as rejected keeps the provider from asking for it again.
    if (refused.length) grant.rejectResourceScope(resource, refused.join(' '));
    const grantId = await grant.save();
    services.logger.info({ sub: user.id, client_id: client.id, scopes: granted }, 'oauth consent');
    return finish(ctx, { consent: { grantId } });
  });

  // "Not you? Use another account": ends this browser's provider session, then asks again.
  router.post('/switch', form, async (ctx) => {
    checkCsrf(ctx);
    const { details } = await load(ctx);
    const sessionId = ctx.cookies.get('_session');
    const session = sessionId ? await provider.Session.find(sessionId) : undefined;
    await session?.destroy();
    const again = new URLSearchParams(Object.entries(details.params).filter((e): e is [string, string] => typeof e[1] === 'string'));
    again.delete('prompt');
    ctx.status = 303;
    ctx.redirect(`/oauth/authorize?${again.toString()}`);
  });

  router.post('/abort', form, async (ctx) => {
    checkCsrf(ctx);
    await load(ctx);
    return finish(ctx, { error: 'access_denied', error_description: 'The user denied the request' }, false);
  });

  return router;
}
