/**
 * Owns the cross-cutting HTTP middleware: request id, access log and metrics, the error
 * envelope, and the 404/405 fallbacks. Only `AppError`s reach clients as they are; any
 * other error is logged with the request id and answered with a generic 500.
 */
import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import { AppError } from './errors';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContext(logger: Logger, metrics: { requests: Counter<string>; duration: Histogram<string> }) {
  return async (ctx: Context, next: Next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The matched route pattern, not the raw path, keeps metric labels bounded.
      const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.requests.inc({ method: ctx.method, route, status: String(ctx.status) });
      metrics.duration.observe({ method: ctx.method, route }, seconds);
      const credential = ctx.state.credential as { id: string; organizationId: string } | undefined;
      logger.info(
        {
          request_id: requestId,
          method: ctx.method,
          path: ctx.path,
          route,
          status: ctx.status,
          duration_ms: Math.round(seconds * 1000),
          credential_id: credential?.id,
          organization_id: credential?.organizationId,
        },
        'request',
      );
    }
  };
}

/** Errors raised by the body parser (co-body / raw-body) carry `status` and `type`. */
function bodyParserError(err: { status?: number; type?: string; body?: unknown }): AppError | undefined {
  if (err.type === 'entity.too.large' || err.status === 413) {
    return new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body exceeds 1 MiB');
  }
  if (err.type === 'entity.parse.failed' || (err.status === 400 && 'body' in err)) return new AppError(400, 'INVALID_REQUEST', 'Request body is not valid JSON');
  if (err.status === 415) return new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json');
  if (err.type === 'encoding.unsupported' || err.type === 'charset.unsupported') {
    return new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported content encoding or charset');
  }
  if (err.type === 'request.aborted') return new AppError(400, 'INVALID_REQUEST', 'Request was aborted');
  return undefined;
}

export function errorEnvelope(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (raw) {
      const err = raw instanceof AppError ? raw : bodyParserError(raw as object);
      if (err) {
        ctx.status = err.status;
        ctx.body = { error: err.toBody() };
        if (err.extra.headers) ctx.set(err.extra.headers);
        return;
      }
      logger.error({ err: raw, request_id: ctx.state.requestId }, 'unhandled error');
      ctx.status = 500;
      ctx.body = { error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } };
    }
  };
}

/** Runs after the router: unmatched paths and methods get the error envelope. */
export async function notFoundFallback(ctx: Context, next: Next) {
  await next();
  if (ctx.body !== undefined && ctx.body !== null) return;
  if (ctx.status === 405 || ctx.status === 501) {
    const allow = ctx.response.get('Allow');
    ctx.status = 405;
    ctx.body = { error: { code: 'METHOD_NOT_ALLOWED', message: `Method ${ctx.method} is not allowed here; allowed: ${allow}` } };
  } else if (ctx.status === 404) {
    ctx.status = 404; // Marks the status explicit so that setting the body keeps it.
    ctx.body = { error: { code: 'NOT_FOUND', message: `No route for ${ctx.method} ${ctx.path}` } };
  }
}
