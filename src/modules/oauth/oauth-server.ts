/**
 * Mounts the authorization server into the service's Koa app, ahead of the JSON-only
 * body handling (the token endpoint takes form bodies and answers RFC 6749 errors):
 * the provider's own endpoints under /oauth and its discovery document, also served at
 * the RFC 8414 address `/.well-known/oauth-authorization-server`; our sign-in and
 * consent pages under /oauth/interaction; and a person's connected applications at /oauth/grants.
 */
import type { Context, Middleware, Next } from 'koa';
import { accountRouter } from './oauth-account';
import { interactionRouter } from './oauth-interactions';
import type { OAuthServices } from './oauth-state';

const RFC8414 = '/.well-known/oauth-authorization-server';
const OIDC_DISCOVERY = '/.well-known/openid-configuration';

export function oauthMiddleware(services: OAuthServices) {
  const { provider } = services.oauth;
  const handle = provider.callback();
  const interactions = interactionRouter(services).routes() as unknown as Middleware;
  const account = accountRouter(services).routes() as unknown as Middleware;
  provider.on('server_error', (_ctx, err) => services.logger.error({ err }, 'oauth server error'));

  const provide = async (ctx: Context) => {
    // The provider writes the response itself.
    ctx.respond = false;
    await handle(ctx.req, ctx.res);
    ctx.status = ctx.res.statusCode;
  };
  // Not an async function: every other request passes through without a promise of its own.
  return (ctx: Context, next: Next) => {
    const path = ctx.path;
    if (path.startsWith('/oauth/interaction/')) return interactions(ctx, next);
    if (path === '/oauth/grants' || path.startsWith('/oauth/grants/')) return account(ctx, next);
    if (path === RFC8414) ctx.req.url = OIDC_DISCOVERY;
    else if (!path.startsWith('/oauth/') && path !== OIDC_DISCOVERY) return next();
    return provide(ctx);
  };
}
