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
import { builtOnFirstUse, type OAuthServices } from './oauth-state';

const RFC8414 = '/.well-known/oauth-authorization-server';
const OIDC_DISCOVERY = '/.well-known/openid-configuration';

export function oauthMiddleware(services: OAuthServices) {
  // Built with the authorization server, at the first request that needs it (oauth-state.ts).
  const mount = builtOnFirstUse(async () => {
    const server = await services.oauth();
    return {
      handle: server.provider.callback(),
      interactions: interactionRouter(services, server).routes() as unknown as Middleware,
      account: accountRouter(services, server).routes() as unknown as Middleware,
    };
  });

  const provide = async (ctx: Context) => {
    const { handle } = await mount();
    // The provider writes the response itself.
    ctx.respond = false;
    await handle(ctx.req, ctx.res);
    ctx.status = ctx.res.statusCode;
  };
  // Not an async function: every other request passes through without a promise of its own.
  return (ctx: Context, next: Next) => {
    const path = ctx.path;
    if (path.startsWith('/oauth/interaction/')) return mount().then(({ interactions }) => interactions(ctx, next));
    if (path === '/oauth/grants' || path.startsWith('/oauth/grants/')) return mount().then(({ account }) => account(ctx, next));
    if (path === RFC8414) ctx.req.url = OIDC_DISCOVERY;
    else if (!path.startsWith('/oauth/') && path !== OIDC_DISCOVERY) return next();
    return provide(ctx);
  };
}
