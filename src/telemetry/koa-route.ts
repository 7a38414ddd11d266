/**
 * Names each request's server span after its route (`POST /v1/messages`, `http.route`),
 * as the Koa instrumentation does for a plain @koa/router: ours dispatches through
 * routeByPrefix (http/prefix-router.ts), a middleware the instrumentation cannot see into,
 * so this reads the route @koa/router matched (`ctx._matchedRoute`, also the metrics label)
 * once the request is answered and hands it to the HTTP instrumentation through the
 * request context's RPC metadata. Installed only when tracing is on.
 */
import { context } from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';
import type { Context, Next } from 'koa';

export async function traceRoute(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } finally {
    const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute;
    const rpc = getRPCMetadata(context.active());
    if (route && rpc?.type === RPCType.HTTP) rpc.route = route;
  }
}
