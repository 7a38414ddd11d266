/**
 * Owns the route definition: one object per endpoint declares its method, path, required
 * scope, rate limits, zod schemas and handler. `mountRoutes` turns each into a Koa route
 * (authenticate → rate limit → authorize → validate → idempotency → handler) and into an
 * OpenAPI operation, so the document always matches what is enforced. A route may declare
 * a `prefetch`: a read without effects that runs beside the rate-limit check instead of
 * after it, handed to the handler.
 *
 * A POST with an `Idempotency-Key` is claimed before its handler runs (src/http/idempotency.ts).
 * A handler whose work has effects records a recovery point with the work (`claim`) and its
 * route declares `resume`, which answers a retry whose first try committed the work but died
 * before its answer was stored.
 */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { Logger } from 'pino';
import type { Credential } from '../credentials/credential';
import type { Scope } from '../credentials/scopes';
import { type Authenticator, requireScope } from './auth';
import { AppError, toHttpError } from './errors';
import type { Config } from '../config';
import { failpoint } from '../failpoints';
import { CLAIM_LOST_SQLSTATE, type HeldClaim, type IdempotencyStore, keyInUse, type RecoveryPoint, requestHash, shouldStore } from './idempotency';
import { takeInputRefusal } from './input-guard';
import { JsonText } from './json-text';
import type { ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { ErrorOut, type OpenAPIRegistry, RATE_LIMIT_HEADERS, type ResponseHeaderName, responseHeaders } from './openapi';
import { type LimitCheck, type LimitName, type LimitRule, rateLimitExceeded, rateLimitHeaders, type RateLimiter } from './rate-limit';
import { type IssueClassifier, parsedOrThrow, parseInput } from './validation';
import { z } from './zod';

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';

export interface HandlerInput<P, Q, B, F = unknown> {
  params: P;
  query: Q;
  body: B;
  /** Present on every route that declares a scope. */
  credential: Credential;
  ctx: Context;
  /** The route's `prefetch`, when it was started (a handler must do without it otherwise). */
  prefetched?: Promise<F>;
  /**
   * The request's `Idempotency-Key` claim, when it has one: a handler of a route with
   * `resume` records its work's recovery point with it, in the work's transaction.
   */
  claim?: HeldClaim;
}

export interface RouteDef<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  F = unknown,
> {
  method: Method;
  /** OpenAPI-style path: `/v1/workflows/{workflow_id}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  description?: string;
  /**
   * Required scope; every route under /v1 declares one. `null`: any valid credential,
   * whatever its scopes (the contract's identity check, `GET /v1/me`).
   */
  scope: Scope | null;
  /** Per-operation limits counted besides the per-credential limit. */
  limits?: LimitName[];
  /**
   * Limits owned by the addressed resource (an api trigger's hourly `rate_limit`), looked up
   * from the raw path parameters and folded into the same single check, so a request refused
   * by any limit counts against none. Like every limit it counts requests that then fail
   * validation. Returns [] when the resource is not found (the handler answers that).
   */
  resourceLimits?(input: { params: Record<string, string>; credential: Credential }): Promise<LimitCheck[]>;
  params?: P;
  query?: Q;
  body?: B;
  classify?: IssueClassifier;
  /** 200 unless given; creates answer 201. */
  status?: number;
  /** Other success statuses a handler may answer with `new Answer(status, body)`, same response schema. */
  alsoAnswers?: Array<[status: number, description: string]>;
  response?: z.ZodType;
  /**
   * A success answer that is not JSON (a file, an event stream) and that the handler writes
   * itself: its content types with their body schemas, and the headers it adds.
   */
  produces?: { content: Record<string, z.ZodType>; headers?: ResponseHeaderName[]; optionalHeaders?: ResponseHeaderName[] };
  /** Documented error answers besides the ones every authenticated route has, with the optional headers they may add. */
  errors?: Array<[status: number, code: string, optionalHeaders?: ResponseHeaderName[]]>;
  /**
   * A read the handler needs, without effects, started beside the rate-limit check so the
   * request does not pay the two round trips one after the other. Started only when the
   * credential has the scope, the body is valid, and the credential's limit has not refused
   * it lately (`RateLimiter.refusedRecently`); its result is dropped when the request is
   * refused after all. Its failure reaches the handler when it awaits it.
   */
  prefetch?(input: { body: z.output<B>; credential: Credential }): Promise<F>;
  /** Returns the response body; returns undefined when it wrote `ctx` itself (files). */
  handler(input: HandlerInput<z.output<P>, z.output<Q>, z.output<B>, F>): Promise<unknown>;
  /**
   * The answer of a retry whose first try's work committed `point` (the handler recorded it
   * with `claim`) and whose answer was never stored: built from the committed rows, without
   * running the work again (a Temporal start it still owes is the reconciler's, or a start by
   * the same derived id). Answered with `Idempotent-Replayed: true`, and stored.
   */
  resume?(input: Omit<HandlerInput<z.output<P>, z.output<Q>, z.output<B>, F>, 'prefetched' | 'claim'> & { point: RecoveryPoint }): Promise<unknown>;
}

/** A handler's answer with a status other than the route's, e.g. 200 for a create that found its first outcome. */
export class Answer {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

const statusAndBody = (route: AnyRoute, result: unknown): [number, unknown] =>
  result instanceof Answer ? [result.status, result.body] : [route.status ?? 200, result];

/** Identity function that lets TypeScript infer a route's schema types. */
export function defineRoute<P extends z.ZodType = z.ZodObject, Q extends z.ZodType = z.ZodObject, B extends z.ZodType = z.ZodUnknown, F = unknown>(
  def: RouteDef<P, Q, B, F>,
): RouteDef<P, Q, B, F> {
  return def;
}

// Route arrays mix schema types; handlers are only ever called with what their own schemas produced.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDef<any, any, any, any>;

const COMMON_ERRORS: Array<[number, string]> = [
  [401, 'MISSING_AUTHENTICATION | INVALID_API_KEY | INVALID_TOKEN'],
  [403, 'INSUFFICIENT_PERMISSIONS | SCOPE_INSUFFICIENT'],
  [429, 'RATE_LIMIT_EXCEEDED'],
  // A dependency (PostgreSQL) is down: with Retry-After (docs/outages.md).
  [503, 'SERVICE_UNAVAILABLE'],
];

const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/**
 * What handling a route needs from the process: the authenticator (each credential module
 * supplies its verifier), the rate limits, the idempotency store and the logger.
 */
export interface RouteServices {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  limits: Record<LimitName, LimitRule>;
  idempotency: IdempotencyStore;
  logger: Logger;
  config: Pick<Config, 'FAILPOINTS'>;
}

export function mountRoutes(router: Router, registry: OpenAPIRegistry, services: RouteServices, routes: AnyRoute[]): void {
  for (const route of routes) {
    router[route.method](koaPath(route.path), (ctx) => handle(ctx, route, services));
    registerOperation(registry, route);
  }
}

async function handle(ctx: Context, route: AnyRoute, services: RouteServices): Promise<void> {
  const credential = await services.authenticator.authenticate(ctx.get('authorization') || undefined);
  ctx.state.credential = credential;

  // Input refused before routing (malformed JSON, NUL characters, nesting) is answered here,
  // after the limits were counted and the scope checked, like any validation error.
  const refusal = takeInputRefusal(ctx);
  const checks: LimitCheck[] = [{ rule: services.limits.credential, subject: credential.limitSubject }];
  for (const name of route.limits ?? []) checks.push({ rule: services.limits[name], subject: credential.limitSubject });
  // Only a credential allowed to use the resource spends its budget (a read key's 403 does
  // not), and only with input that names it (refused input may not even be a valid id).
  if (route.resourceLimits && allows(credential, route.scope) && refusal === undefined) {
    checks.push(...(await route.resourceLimits({ params: ctx.params as Record<string, string>, credential })));
  }
  // The body is parsed once, here: a prefetch needs it before the limits; its error (if
  // any) is still thrown after them and the scope, in the usual order.
  const received: unknown = ctx.request.body;
  const parsedBody = refusal === undefined ? route.body?.safeParse(received ?? {}) : undefined;
  const prefetched = refusal === undefined ? startPrefetch(route, credential, parsedBody, services) : undefined;
  const limit = await services.rateLimiter.check(checks);
  ctx.set(rateLimitHeaders(limit));
  if (!limit.allowed) throw rateLimitExceeded(limit);

  if (route.scope) requireScope(credential, route.scope);
  if (refusal !== undefined) throw refusal;

  const params = route.params ? parseInput(route.params, ctx.params, route.classify) : {};
  const query = route.query ? parseInput(route.query, { ...ctx.query }, route.classify) : {};
  const body = parsedBody ? parsedOrThrow(parsedBody, received ?? {}, route.classify) : undefined;
  if (!route.body && hasContent(received)) throw new AppError(400, 'INVALID_REQUEST', 'This endpoint takes no request body');

  const idempotencyKey = route.method === 'post' ? ctx.get('idempotency-key') : '';
  if (!idempotencyKey) {
    const [status, result] = statusAndBody(route, await route.handler({ params, query, body, credential, ctx, prefetched }));
    if (result !== undefined) respond(ctx, status, result);
    return;
  }

  const store = services.idempotency;
  store.validateKey(idempotencyKey);
  const organizationId = credential.organizationId;
  const claim = await store.claim(organizationId, idempotencyKey, requestHash('POST', ctx.path, received));
  if (claim.kind === 'replay') {
    ctx.set('Idempotent-Replayed', 'true');
    respond(ctx, claim.response.status, claim.response.body);
    return;
  }
  if (claim.kind === 'resume') {
    // Only a route with `resume` records points; a point without one is a request still running.
    if (!route.resume) throw keyInUse();
    let resumed: [number, unknown];
    try {
      resumed = statusAndBody(route, await route.resume({ params, query, body, credential, ctx, point: claim.point }));
    } catch (err) {
      const httpError = toHttpError(err);
      if (httpError && shouldStore(httpError.status)) {
        await store.completeResumed(organizationId, idempotencyKey, { status: httpError.status, body: { error: httpError.toBody() } });
        ctx.set('Idempotent-Replayed', 'true');
      }
      throw err;
    }
    const [status, result] = resumed;
    await store.completeResumed(organizationId, idempotencyKey, { status, body: storable(result) });
    ctx.set('Idempotent-Replayed', 'true');
    if (result !== undefined) respond(ctx, status, result);
    return;
  }
  let answer: [number, unknown];
  try {
    answer = statusAndBody(route, await route.handler({ params, query, body, credential, ctx, prefetched, claim: claim.held }));
  } catch (caught) {
    // The work's statement found its claim taken over (its lease lapsed): it rolled back.
    const err = (caught as { code?: string }).code === CLAIM_LOST_SQLSTATE ? keyInUse() : caught;
    const httpError = toHttpError(err);
    if (httpError && shouldStore(httpError.status)) {
      await claim.held.complete({ status: httpError.status, body: { error: httpError.toBody() } });
    } else {
      await claim.held.release();
    }
    throw err;
  }
  // Crash tests die here: the work is committed (with its recovery point), its answer not stored.
  failpoint(services.config, 'idempotency.before_store', `POST ${ctx.path}`);
  const [status, result] = answer;
  // The work is done: its answer goes out even if storing it fails (the pool busy). A 503
  // now would tell the client that nothing happened. A retry with this key then resumes
  // from the work's recovery point (or, for a route without one, runs again once the
  // claim's lease lapses), as after a crash at this point.
  await claim.held.complete({ status, body: storable(result) }).catch((err: unknown) =>
    services.logger.warn({ err, request_id: ctx.state.requestId }, 'the answer of an idempotent request could not be stored; it is answered all the same'),
  );
  if (result !== undefined) respond(ctx, status, result);
}

const storable = (result: unknown) => (result instanceof JsonText ? JSON.parse(result.text) : (result ?? null));

/** Whether the credential may use a route of this scope (`null`: any credential may). */
const allows = (credential: Credential, scope: Scope | null) => scope === null || credential.scopes.has(scope);

/** The route's prefetch, when the request will most likely get to its handler (see `RouteDef.prefetch`). */
function startPrefetch(
  route: AnyRoute,
  credential: Credential,
  parsedBody: z.ZodSafeParseResult<unknown> | undefined,
  services: RouteServices,
): Promise<unknown> | undefined {
  if (!route.prefetch || parsedBody?.success === false || !allows(credential, route.scope)) return undefined;
  if (services.rateLimiter.refusedRecently(credential.limitSubject)) return undefined;
  const read = route.prefetch({ body: parsedBody?.data, credential });
  // Awaited by the handler, or dropped with the request: never an unhandled rejection.
  read.catch(() => undefined);
  return read;
}

function respond(ctx: Context, status: number, body: unknown) {
  ctx.status = status;
  if (body instanceof JsonText) {
    ctx.type = 'application/json';
    ctx.body = body.text;
    return;
  }
  ctx.body = body;
}

function hasContent(body: unknown): boolean {
  if (body === undefined || body === null) return false;
  if (typeof body === 'object') return Object.keys(body).length > 0;
  return true;
}

/** Statuses answered before authentication (by the body checks or the authenticator): no limit was counted, so no limit headers. */
const BEFORE_LIMITS = new Set([401, 413, 415]);

/** The headers each documented status carries; the limit headers are decided in docs/decisions.md. */
function headersFor(status: number, method: Method) {
  const replayable = method === 'post' && status < 500 && status !== 403 && status !== 429 ? (['Idempotent-Replayed'] as const) : [];
  if (status === 401) return responseHeaders(['WWW-Authenticate']);
  if (BEFORE_LIMITS.has(status)) return responseHeaders([]);
  // Every 400 is answered after the limits were counted, a malformed JSON body's included (src/http/input-guard.ts).
  if (status === 400) return responseHeaders(RATE_LIMIT_HEADERS, replayable);
  if (status === 429) return responseHeaders([...RATE_LIMIT_HEADERS, 'Retry-After']);
  // A dependency outage can strike before the limits are counted (authentication on a cache miss).
  if (status === 503) return responseHeaders(['Retry-After'], RATE_LIMIT_HEADERS);
  if (status === 409 && method === 'post') return responseHeaders(RATE_LIMIT_HEADERS, ['Retry-After', ...replayable]);
  return responseHeaders(RATE_LIMIT_HEADERS, replayable);
}

function registerOperation(registry: OpenAPIRegistry, route: AnyRoute) {
  // A route open to every credential has no 403 to answer.
  const common = route.scope ? COMMON_ERRORS : COMMON_ERRORS.filter(([status]) => status !== 403);
  const errors: Array<[number, string, ResponseHeaderName[]?]> = [...(route.errors ?? []), ...common];
  errors.push([400, route.params || route.query || route.body ? 'INVALID_REQUEST | MISSING_REQUIRED_FIELD' : 'INVALID_REQUEST']);
  if (route.method === 'post') errors.push([409, 'IDEMPOTENCY_KEY_REUSED | IDEMPOTENCY_KEY_IN_USE']);
  if (route.body) errors.push([413, 'PAYLOAD_TOO_LARGE'], [415, 'UNSUPPORTED_MEDIA_TYPE']);
  const byStatus = new Map<number, string[]>();
  const extraHeaders = new Map<number, ResponseHeaderName[]>();
  for (const [status, code, optional] of errors) {
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    if (optional) extraHeaders.set(status, [...(extraHeaders.get(status) ?? []), ...optional]);
  }

  const status = route.status ?? 200;
  const responses: Record<string, ResponseConfig> = {
    [String(status)]: {
      description: 'Success',
      headers: { ...headersFor(status, route.method), ...responseHeaders(route.produces?.headers ?? [], route.produces?.optionalHeaders) },
      ...(route.response ? { content: { 'application/json': { schema: route.response } } } : {}),
      ...(route.produces ? { content: Object.fromEntries(Object.entries(route.produces.content).map(([type, schema]) => [type, { schema }])) } : {}),
    },
  };
  for (const [alsoStatus, description] of route.alsoAnswers ?? []) {
    responses[String(alsoStatus)] = {
      description,
      headers: headersFor(alsoStatus, route.method),
      ...(route.response ? { content: { 'application/json': { schema: route.response } } } : {}),
    };
  }
  for (const [errorStatus, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(errorStatus)] = {
      description: codes.join(' | '),
      headers: { ...headersFor(errorStatus, route.method), ...responseHeaders([], extraHeaders.get(errorStatus)) },
      content: { 'application/json': { schema: ErrorOut } },
    };
  }

  registry.registerPath({
    method: route.method,
    path: route.path,
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    // Tokens (OAuth, JWT) need the route's scope; an API key needs the permission level that includes it.
    security: [{ apiKey: [] }, { oauth2: route.scope ? [route.scope] : [] }, { jwt: route.scope ? [route.scope] : [] }],
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
