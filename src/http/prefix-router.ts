/**
 * Dispatches each request only to the routes that share its first two path segments
 * (`/v1/workflows` for `GET /v1/workflows/wf_1`). One @koa/router tests every route's
 * regular expression against every request and keeps every match: with ~100 routes that
 * was ~100 regex tests per request. Split by prefix a request tests the handful of routes
 * that can match it (13 for `/v1/workflows`).
 *
 * Same answers as the routers it is built from: each group is a @koa/router holding the
 * very same `Layer` objects in the same order (params, HEAD, OPTIONS, 405/501, the
 * matched route for metrics), and a path no group knows goes to an empty router, which
 * answers exactly as the full one did for a path no route matches. Matching stays
 * case-insensitive and tolerant of one trailing slash, as @koa/router's defaults are.
 * Every route's first two segments must be literal; `routeByPrefix` refuses others at start.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';

const LITERAL_PREFIX = /^\/[\w.-]+(\/[\w.-]+)?$/;

/** `/v1/workflows/:id` → `/v1/workflows`, `/healthz/` → `/healthz`; lower case. */
function prefixOf(path: string): string {
  const second = path.indexOf('/', 1);
  let end = second === -1 ? path.length : path.indexOf('/', second + 1);
  if (end === -1) end = path.length;
  // A trailing slash after the first segment (`/healthz/`) is not a second segment.
  if (end === second + 1) end = second;
  return path.slice(0, end).toLowerCase();
}

/** The routers' routes, grouped by prefix, in one middleware; routers with options (prefix, host, methods) are not supported. */
export function routeByPrefix(routers: Router[]): Middleware {
  const groups = new Map<string, Router>();
  for (const router of routers) {
    for (const layer of router.stack) {
      const prefix = typeof layer.path === 'string' ? prefixOf(layer.path) : '';
      if (!LITERAL_PREFIX.test(prefix)) throw new Error(`routeByPrefix: route ${String(layer.path)} does not start with two literal segments`);
      let group = groups.get(prefix);
      if (!group) groups.set(prefix, (group = new Router()));
      group.stack.push(layer);
    }
  }
  const dispatch = new Map<string, Middleware>();
  for (const [prefix, group] of groups) dispatch.set(prefix, routesThenAllowedMethods(group));
  const unknown = routesThenAllowedMethods(new Router());
  return (ctx, next) => (dispatch.get(prefixOf(ctx.path)) ?? unknown)(ctx, next);
}

/** `app.use(router.routes()); app.use(router.allowedMethods())` as one middleware. */
function routesThenAllowedMethods(router: Router): Middleware {
  const routes = router.routes() as unknown as Middleware;
  const allowed = router.allowedMethods() as unknown as Middleware;
  return (ctx, next) => routes(ctx, () => allowed(ctx, next));
}
