/**
 * Owns error classification, the ONE place that decides whether a failure is our own
 * infrastructure being unavailable (PostgreSQL, Redis, Temporal: wait and retry, answer
 * 503), a third-party provider's failure (channel provider, model endpoint: a bounded
 * budget, then `api_error`), or anything else. The HTTP error middleware, the activities'
 * retry decisions (temporal/failures.ts) and the dependency monitor all ask here.
 */

export type Dependency = 'postgres' | 'redis' | 'temporal';

export type Classified =
  | { kind: 'infrastructure'; dependency: Dependency | 'unknown'; message: string }
  | { kind: 'provider'; message: string }
  | { kind: 'other'; message: string };

/**
 * A third party (channel provider, model endpoint) failed. Activities wrap provider calls
 * in it so a provider's ECONNREFUSED is never mistaken for our database's.
 */
export class ProviderError extends Error {
  constructor(
    readonly provider: 'channel' | 'model',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ProviderError';
  }
}

/** Where our own dependencies listen (`host:port`), to name the target of a bare socket error. */
export type Endpoints = Partial<Record<Dependency, string>>;

export function endpointsFromConfig(c: { DATABASE_URL: string; REDIS_URL: string; TEMPORAL_ADDRESS_EFFECTIVE: string }): Endpoints {
  const port = (url: string, fallback: string) => {
    try {
      return new URL(url).port || fallback;
    } catch {
      return fallback;
    }
  };
  return {
    postgres: port(c.DATABASE_URL, '5432'),
    redis: port(c.REDIS_URL, '6379'),
    temporal: c.TEMPORAL_ADDRESS_EFFECTIVE.split(':').pop() ?? '7233',
  };
}

/** Socket-level failures: the peer is not there (or went away mid-conversation). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * PostgreSQL SQLSTATEs that mean "the server cannot serve now", not "your query is wrong":
 * class 08 (connection exception), 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
 * cannot_connect_now, 53300 too_many_connections.
 */
const PG_UNAVAILABLE = /^(08...|57P0[123]|53300)$/;

/**
 * Messages of pg, pg's pool (db/hot-query.ts), knex (pool, transactions) and ioredis that
 * carry no code but mean the same (knex reports a transaction whose connection died as
 * "already complete").
 */
const PG_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Connection ended unexpectedly|Transaction query already complete|Timeout acquiring a connection|Client has encountered a connection error|the database system is (starting up|shutting down|in recovery)|terminating connection/i;
const REDIS_MESSAGES = /Connection is closed|Stream isn't writeable|enableOfflineQueue|Reached the max retries per request|Command timed out/i;

/** gRPC UNAVAILABLE / DEADLINE_EXCEEDED from the Temporal client. */
const GRPC_UNAVAILABLE = new Set([14, 4]);

interface ErrorLike {
  name?: string;
  message?: string;
  code?: unknown;
  port?: unknown;
  cause?: unknown;
}

/** The error and its causes (pg errors get wrapped by MikroORM, fetch errors carry theirs in `cause`). */
function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  let cur: unknown = err;
  while (cur && typeof cur === 'object' && out.length < 6) {
    out.push(cur as ErrorLike);
    cur = (cur as ErrorLike).cause;
  }
  return out;
}

function dependencyOfSocket(e: ErrorLike, endpoints: Endpoints): Dependency | 'unknown' {
  const port = e.port === undefined ? undefined : String(e.port);
  for (const [dep, p] of Object.entries(endpoints) as Array<[Dependency, string]>) if (port !== undefined && port === p) return dep;
  return 'unknown';
}

export function classifyError(err: unknown, endpoints: Endpoints = {}): Classified {
  const links = chain(err);
  const message = links[0]?.message ?? String(err);
  // A provider's failure stays the provider's whatever its cause (its own ECONNREFUSED).
  if (links.some((e) => e instanceof ProviderError)) return { kind: 'provider', message };
  for (const e of links) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code && PG_UNAVAILABLE.test(code)) return { kind: 'infrastructure', dependency: 'postgres', message };
    if (e.name === 'KnexTimeoutError' || e.name === 'ConnectionException' || PG_MESSAGES.test(e.message ?? '')) {
      return { kind: 'infrastructure', dependency: 'postgres', message };
    }
    if (e.name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(e.message ?? '')) return { kind: 'infrastructure', dependency: 'redis', message };
    if (code && SOCKET_CODES.has(code)) return { kind: 'infrastructure', dependency: dependencyOfSocket(e, endpoints), message };
    // A gRPC status (it carries `metadata`) of the Temporal client: the server is not answering.
    if (typeof e.code === 'number' && GRPC_UNAVAILABLE.has(e.code) && 'metadata' in e) {
      return { kind: 'infrastructure', dependency: 'temporal', message };
    }
  }
  return { kind: 'other', message };
}

export const isInfrastructureError = (err: unknown, endpoints?: Endpoints): boolean => classifyError(err, endpoints).kind === 'infrastructure';
