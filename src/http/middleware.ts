/**
 * Owns the cross-cutting HTTP middleware: request id, access log and metrics with the error
 * envelope, and the 404/405 fallbacks. Only HTTP and domain errors (`toHttpError`) reach
 * clients as they are; an unavailable dependency is a 503; any other error is logged with
 * the request id and answered with a generic 500.
 */
import { randomUUID } from 'node:crypto';
import { DeadlockException } from '@mikro-orm/postgresql';
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import type { DependencyMonitor } from '../dependency-monitor';
import { classifyError, type Endpoints } from '../failures';
import { busyWithConflict } from '../errors';
import { AppError, toHttpError } from './errors';
import { takeInputRefusal } from './input-guard';
import { answerThenDiscardBody } from './lingering-close';

/** Seconds a client is told to wait while a dependency is down: about how often we probe it, with margin. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_S = 5;

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Request id, access log and metrics, and the error envelope, in one middleware (each
 * layer costs every request a closure and a few promises: docs/performance.md). The
 * envelope answers inside the access log's span, so the logged status is the one sent.
 */
export function requestContext(
  logger: Logger,
  metrics: { requests: Counter<string>; duration: Histogram<string> },
  outages?: { dependencies: DependencyMonitor; endpoints: Endpoints },
) {
  const answerError = errorAnswerer(logger, outages);
  return async (ctx: Context, next: Next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID_PATTERN.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } catch (raw) {
      answerError(ctx, raw);
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // The matched route pattern, not the raw path, keeps metric labels bounded.
      const route = (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.requests.inc({ method: ctx.method, route, status: String(ctx.status) });
      metrics.duration.observe({ method: ctx.method, route }, seconds);
      // The line's object is built only when it is written (LOG_LEVEL=silent or warn skip it).
      if (logger.isLevelEnabled('info')) {
        const credential = ctx.state.credential as { id: string; organizationId: string; subject?: string } | undefined;
        logger.info(
          {
            request_id: requestId,
            method: ctx.method,
            path: ctx.path,
            route,
            status: ctx.status,
            duration_ms: Math.round(seconds * 1000),
            credential_id: credential?.id,
            sub: credential?.subject,
            organization_id: credential?.organizationId,
          },
          'request',
        );
      }
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

/**
 * Our own infrastructure being unavailable is a 503 SERVICE_UNAVAILABLE with Retry-After,
 * never a 500, and is logged once per outage by the monitor (not once per request).
 */
function unavailableError(raw: unknown, dependencies: DependencyMonitor | undefined, endpoints: Endpoints): AppError | undefined {
  // A deadlock that outlived its transaction's retries (src/db/transaction.ts) is contention, not an outage.
  if (raw instanceof DeadlockException) return toHttpError(busyWithConflict());
  const c = classifyError(raw, endpoints);
  if (c.kind !== 'infrastructure') return undefined;
  if (c.dependency !== 'unknown') dependencies?.reportDown(c.dependency, raw);
  return new AppError(503, 'SERVICE_UNAVAILABLE', 'The service is temporarily unavailable; retry shortly', {
    retryAfter: SERVICE_UNAVAILABLE_RETRY_AFTER_S,
    headers: { 'Retry-After': String(SERVICE_UNAVAILABLE_RETRY_AFTER_S) },
  });
}

/** Answers a thrown error in the contract's envelope (see the file comment). */
function errorAnswerer(logger: Logger, outages?: { dependencies: DependencyMonitor; endpoints: Endpoints }) {
  return (ctx: Context, raw: unknown) => {
    const err = toHttpError(raw) ?? bodyParserError(raw as object) ?? unavailableError(raw, outages?.dependencies, outages?.endpoints ?? {});
    if (err) {
      if (err.extra.headers) ctx.set(err.extra.headers);
      // The body was refused unread: answer, then drain it before closing (src/http/lingering-close.ts).
      if (err.status === 413) return answerThenDiscardBody(ctx, err.status, { error: err.toBody() });
      ctx.status = err.status;
      ctx.body = { error: err.toBody() };
      return;
    }
    logger.error({ err: raw, request_id: ctx.state.requestId }, 'unhandled error');
    ctx.status = 500;
    ctx.body = { error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } };
  };
}

/**
 * Wraps the routers: what they leave unanswered (an unmatched path or method) gets the
 * error envelope. A `.then` rather than another async layer: one promise per request.
 */
export function withNotFoundFallback(routes: Middleware): Middleware {
  return (ctx, next) => Promise.resolve(routes(ctx, next)).then(() => answerUnrouted(ctx));
}

function answerUnrouted(ctx: Context) {
  // Input refused before routing that no route took (src/http/input-guard.ts): answered as before routing.
  const refusal = takeInputRefusal(ctx);
  if (refusal !== undefined) throw refusal;
  answerUnroutedPath(ctx);
}

function answerUnroutedPath(ctx: Context) {
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
