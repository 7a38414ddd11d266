/**
 * Owns the route definition: one object per endpoint declares its method, path, required
 * scope, rate limits, zod schemas and handler. `mountRoutes` turns each into a Koa route
 * (authenticate → rate limit → authorize → validate → idempotency → handler) and into an
 * OpenAPI operation, so the document always matches what is enforced.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Services } from '../services';
import { type Credential, requireScope, type Scope } from './auth';
import { AppError } from './errors';
import { requestHash, shouldStore } from './idempotency';
import { ErrorOut, type OpenAPIRegistry } from './openapi';
import { type LimitCheck, type LimitName, rateLimitExceeded, rateLimitHeaders } from './rate-limit';
import { type IssueClassifier, parseInput } from './validation';
import { z } from './zod';

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';

export interface HandlerInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Present on every route that declares a scope. */
  credential: Credential;
  ctx: Context;
}

export interface RouteDef<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: Method;
  /** OpenAPI-style path: `/v1/workflows/{workflow_id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  description?: string;
  /** Required scope; every route under /v1 declares one. */
  scope: Scope;
  /** Per-operation limits counted besides the per-credential limit. */
  limits?: LimitName[];
  params?: P;
  query?: Q;
  body?: B;
  classify?: IssueClassifier;
  /** 200 unless given; creates answer 201. */
  status?: number;
  response?: z.ZodType;
  /** Documented error answers besides the ones every authenticated route has. */
  errors?: Array<[status: number, code: string]>;
  /** Returns the response body; returns undefined when it wrote `ctx` itself (files). */
  handler(input: HandlerInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<unknown>;
}

/** Identity function that lets TypeScript infer a route's schema types. */
export function defineRoute<P extends z.ZodType = z.ZodObject, Q extends z.ZodType = z.ZodObject, B extends z.ZodType = z.ZodUnknown>(
  def: RouteDef<P, Q, B>,
): RouteDef<P, Q, B> {
  return def;
}

// Route arrays mix schema types; handlers are only ever called with what their own schemas produced.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDef<any, any, any>;

const COMMON_ERRORS: Array<[number, string]> = [
  [401, 'MISSING_AUTHENTICATION | INVALID_API_KEY | INVALID_TOKEN'],
  [403, 'INSUFFICIENT_PERMISSIONS | SCOPE_INSUFFICIENT'],
  [429, 'RATE_LIMIT_EXCEEDED'],
];

const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

export function mountRoutes(router: Router, registry: OpenAPIRegistry, services: Services, routes: AnyRoute[]): void {
  for (const route of routes) {
    router[route.method](koaPath(route.path), (ctx) => handle(ctx, route, services));
    registerOperation(registry, route);
  }
}

async function handle(ctx: Context, route: AnyRoute, services: Services): Promise<void> {
  const credential = await services.authenticator.authenticate(ctx.get('authorization') || undefined);
  ctx.state.credential = credential;

  const checks: LimitCheck[] = [{ rule: services.limits.credential, subject: credential.id }];
  for (const name of route.limits ?? []) checks.push({ rule: services.limits[name], subject: credential.id });
  const limit = await services.rateLimiter.check(checks);
  ctx.set(rateLimitHeaders(limit));
  if (!limit.allowed) throw rateLimitExceeded(limit);

  requireScope(credential, route.scope);

  const params = route.params ? parseInput(route.params, ctx.params, route.classify) : {};
  const query = route.query ? parseInput(route.query, { ...ctx.query }, route.classify) : {};
  const received: unknown = ctx.request.body;
  const body = route.body ? parseInput(route.body, received ?? {}, route.classify) : undefined;
  if (!route.body && hasContent(received)) throw new AppError(400, 'INVALID_REQUEST', 'This endpoint takes no request body');

  const idempotencyKey = route.method === 'post' ? ctx.get('idempotency-key') : '';
  if (!idempotencyKey) {
    const result = await route.handler({ params, query, body, credential, ctx });
    if (result !== undefined) respond(ctx, route.status ?? 200, result);
    return;
  }

  const store = services.idempotency;
  store.validateKey(idempotencyKey);
  const claim = await store.claim(credential.organizationId, idempotencyKey, requestHash('POST', ctx.path, received));
  if (claim.kind === 'replay') {
    ctx.set('Idempotent-Replayed', 'true');
    respond(ctx, claim.response.status, claim.response.body);
    return;
  }
  try {
    const result = await route.handler({ params, query, body, credential, ctx });
    const status = route.status ?? 200;
    await store.complete(credential.organizationId, idempotencyKey, { status, body: result ?? null });
    if (result !== undefined) respond(ctx, status, result);
  } catch (err) {
    if (err instanceof AppError && shouldStore(err.status)) {
      await store.complete(credential.organizationId, idempotencyKey, { status: err.status, body: { error: err.toBody() } });
    } else {
      await store.release(credential.organizationId, idempotencyKey);
    }
    throw err;
  }
}

function respond(ctx: Context, status: number, body: unknown) {
  ctx.status = status;
  ctx.body = body;
}

function hasContent(body: unknown): boolean {
  if (body === undefined || body === null) return false;
  if (typeof body === 'object') return Object.keys(body).length > 0;
  return true;
}

function registerOperation(registry: OpenAPIRegistry, route: AnyRoute) {
  const errors = [...(route.errors ?? []), ...COMMON_ERRORS];
  if (route.params || route.query || route.body) errors.push([400, 'INVALID_REQUEST | MISSING_REQUIRED_FIELD']);
  const byStatus = new Map<number, string[]>();
  for (const [status, code] of errors) byStatus.set(status, [...(byStatus.get(status) ?? []), code]);

  const responses: Record<string, { description: string; content?: Record<string, { schema: z.ZodType }> }> = {
    [String(route.status ?? 200)]: {
      description: 'Success',
      ...(route.response ? { content: { 'application/json': { schema: route.response } } } : {}),
    },
  };
  for (const [status, codes] of byStatus) {
    responses[String(status)] = { description: codes.join(' | '), content: { 'application/json': { schema: ErrorOut } } };
  }

  registry.registerPath({
    method: route.method,
    path: route.path,
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    request: {
      ...(route.params ? { params: route.params as z.ZodObject } : {}),
      ...(route.query ? { query: route.query as z.ZodObject } : {}),
      ...(route.body ? { body: { content: { 'application/json': { schema: route.body } }, required: true } } : {}),
      ...(route.method === 'post'
        ? { headers: z.object({ 'Idempotency-Key': z.string().max(255).optional().openapi({ description: 'Replays the first response for 24 h' }) }) }
        : {}),
    },
    responses,
  });
}
