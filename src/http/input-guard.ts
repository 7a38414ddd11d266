/**
 * Owns the rules every client-supplied value obeys before any route, service or database
 * sees it, for /v1 and the webhook-trigger receiver alike:
 * - no NUL character (U+0000, `%00`) in a body key or value, a query parameter or the
 *   path: PostgreSQL cannot store it in text, so it is refused here with 400 and `field`
 *   rather than failing later as a 500;
 * - JSON bodies nest at most `MAX_JSON_DEPTH` levels and hold at most `MAX_JSON_KEYS`
 *   object keys, so nothing recursive (ORM, JSON.stringify, zod) meets a deep document.
 * The walk is iterative (an explicit stack), so a 10,000-level document is measured
 * without recursing; V8's JSON.parse is itself iterative.
 */
import type { Context, Next } from 'koa';
import { AppError, formatFieldPath } from './errors';

export const MAX_JSON_DEPTH = 32;
export const MAX_JSON_KEYS = 10_000;

const NUL = '\u0000';

const invalid = (message: string, field?: string) =>
  new AppError(400, 'INVALID_REQUEST', message, field === undefined || field === '' ? {} : { field });

const needsVisit = (v: unknown) => typeof v === 'string' || (v !== null && typeof v === 'object');

/** A value on the walk's stack; the path is rebuilt from the parent links only to report a problem. */
interface Node {
  value: unknown;
  key?: PropertyKey;
  parent?: Node;
  depth: number;
}

const fieldOf = (node: Node): string => {
  const path: PropertyKey[] = [];
  for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) path.unshift(n.key);
  return formatFieldPath(path);
};

/** Throws the first problem of a parsed JSON body. */
function assertSafeJson(body: unknown): void {
  let keys = 0;
  const stack: Node[] = [{ value: body, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { value, depth } = node;
    if (typeof value === 'string') {
      if (value.includes(NUL)) throw invalid(`${fieldOf(node) || 'Request body'} must not contain NUL characters`, fieldOf(node));
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) throw invalid(`JSON nesting is deeper than ${MAX_JSON_DEPTH} levels`, fieldOf(node));
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) if (needsVisit(value[i])) stack.push({ value: value[i], key: i, parent: node, depth: depth + 1 });
      continue;
    }
    const entries = Object.entries(value as Record<string, unknown>);
    keys += entries.length;
    if (keys > MAX_JSON_KEYS) throw invalid(`JSON body has more than ${MAX_JSON_KEYS} object keys`);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!;
      if (key.includes(NUL)) throw invalid(`${fieldOf(node) || 'Request body'} has a key containing NUL characters`, fieldOf(node));
      if (needsVisit(child)) stack.push({ value: child, key, parent: node, depth: depth + 1 });
    }
  }
}

function decodedPath(ctx: Context): string {
  try {
    return decodeURIComponent(ctx.path);
  } catch {
    return ctx.path; // A malformed escape is the router's 404, not ours.
  }
}

/**
 * Answers given after authentication: on /v1 (routes of `defineRoute`), a body or input the
 * service refuses before routing (malformed JSON, NUL characters, nesting) is answered by
 * the route after the credential's rate limits were counted, so this 400 carries the
 * `X-RateLimit-*` headers like every other answer to an authenticated request. The trigger
 * receiver (its own authentication, by signature) and the paths outside /v1 refuse at once.
 * 413 and 415 are decided before the body is read, and stay answered at once everywhere.
 */
export const refusesAfterAuthentication = (ctx: Context) => ctx.path.startsWith('/v1/');

/** Keeps the first refusal of the request's input for its route to throw (`takeInputRefusal`). */
export function deferInputRefusal(ctx: Context, err: unknown): void {
  if (ctx.state.inputRefusal === undefined) ctx.state.inputRefusal = err;
}

/** The refusal kept for the route, if any; taken once (what is left is thrown after routing). */
export function takeInputRefusal(ctx: Context): unknown {
  const refusal: unknown = ctx.state.inputRefusal;
  ctx.state.inputRefusal = undefined;
  return refusal;
}

/**
 * Koa middleware, mounted right after the body parser: checks the parsed body, every
 * query parameter (field = its name) and the path (field `path`) before routing; a problem
 * is thrown at once or, on /v1, kept for the route (`refusesAfterAuthentication`). Not an
 * async function (one promise less per request); it throws synchronously, which Koa's
 * dispatcher turns into a rejection like any other.
 */
export function inputGuard(ctx: Context, next: Next): Promise<void> {
  if (!refusesAfterAuthentication(ctx)) {
    checkInput(ctx);
    return next();
  }
  try {
    checkInput(ctx);
  } catch (err) {
    deferInputRefusal(ctx, err);
  }
  return next();
}

function checkInput(ctx: Context): void {
  // Only a `%` can decode to NUL: most paths skip decoding.
  const path = ctx.path;
  if (path.includes('%') ? decodedPath(ctx).includes(NUL) : path.includes(NUL)) throw invalid('The request path must not contain NUL characters', 'path');
  // `ctx.query` parses the query string (and caches it); without one there is nothing to check.
  if (ctx.querystring) {
    for (const [name, value] of Object.entries(ctx.query)) {
      if (name.includes(NUL)) throw invalid('Query parameter names must not contain NUL characters');
      for (const v of Array.isArray(value) ? value : [value]) {
        if (typeof v === 'string' && v.includes(NUL)) throw invalid(`${name} must not contain NUL characters`, name);
      }
    }
  }
  if (ctx.request.body !== undefined) assertSafeJson(ctx.request.body);
}
