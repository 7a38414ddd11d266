/**
 * Owns the JSON logger (pino). Secrets never reach a log line:
 * - `redactSecrets` censors secret-like fields (secret, key, token, password,
 *   authorization, signatures, cookies) at any depth up to MAX_REDACT_DEPTH, in the logged
 *   object, in child bindings and in serialized errors. It replaces pino's `redact` paths
 *   (`*.key`, `*.*.key`, …): wildcard-first paths run fast-redact on every value of every
 *   line, which measured ~125 µs of CPU per access-log line, more than a whole
 *   `GET /v1/workflows/{id}` without logging; this walk costs ~7 µs (docs/performance.md);
 * - the `err` serializer cleans database errors. MikroORM inlines the parameter values
 *   into the SQL it sends, knex prefixes that SQL to the error message, and MikroORM appends
 *   PostgreSQL's `detail` ("Failing row contains (...)", every column's value): so a failed
 *   INSERT of a webhook would log its signing secret in `message` and `stack`. For those
 *   errors only PostgreSQL's own message, the statement's verb and table, the SQLSTATE and
 *   the schema/table/column/constraint names are kept.
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import { traceLogFields } from './telemetry/log-fields';
import { tracingOn } from './telemetry/state';

const SECRET_FIELDS = [
  'secret',
  'client_secret',
  'key',
  'api_key',
  'apiKey',
  'token',
  'access_token',
  'refresh_token',
  'password',
  'authorization',
  'Authorization',
  'cookie',
  'set-cookie',
  'x-service-signature',
  'webhook-signature',
];

const SECRET_KEYS: ReadonlySet<string> = new Set(SECRET_FIELDS);
const CENSOR = '[redacted]';
/** Deeper than any object we log; bounds the walk on cyclic or huge values. */
const MAX_REDACT_DEPTH = 8;

/**
 * `value` with every field named like a secret censored, at any depth: a copy of only the
 * objects on the way to a censored field, everything else shared; the caller's objects are
 * never changed. An Error holding one is serialized first (pino's err serializer), so its
 * message and stack survive.
 */
function redactSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > MAX_REDACT_DEPTH || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const redacted = redactSecrets(item, depth + 1);
      if (redacted !== item) (copy ??= value.slice())[i] = redacted;
    }
    return copy ?? value;
  }
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(source)) {
    const field = source[key];
    const redacted = SECRET_KEYS.has(key) ? (field === undefined ? field : CENSOR) : redactSecrets(field, depth + 1);
    if (redacted === field) continue;
    if (source instanceof Error) return redactSecrets(pino.stdSerializers.err(source), depth);
    copy ??= { ...source };
    copy[key] = redacted;
  }
  return copy ?? value;
}

/** Fields of a PostgreSQL error that can carry row or parameter values. */
const DATABASE_VALUE_FIELDS = ['detail', 'hint', 'where', 'internalQuery', 'position', 'internalPosition', 'query', 'sql', 'params', 'parameters'];

/** A `pg` error, or MikroORM's DriverException that copied its fields. */
const isDatabaseError = (e: Record<string, unknown>) => typeof e.severity === 'string' && typeof e.routine === 'string';

/**
 * The message knex and MikroORM build is `<sql with values> - <postgres message>[\n - detail: …][\n - hint: …]`:
 * strip the known suffixes, then keep what follows the last ` - ` (PostgreSQL's message).
 */
function cleanDatabaseError(e: Record<string, unknown>): void {
  let message = String(e.message ?? '');
  for (const [label, value] of [['hint', e.hint], ['detail', e.detail]] as const) {
    const suffix = `\n - ${label}: ${String(value)}`;
    if (value !== undefined && message.endsWith(suffix)) message = message.slice(0, -suffix.length);
  }
  const cut = message.lastIndexOf(' - ');
  const sql = cut === -1 ? '' : message.slice(0, cut);
  const statement = /^\s*(insert\s+into|update|delete\s+from)\s+("[^"]+"|\w+)/i.exec(sql);
  e.message = cut === -1 ? `database error ${String(e.code ?? '')}` : message.slice(cut + 3);
  if (statement) e.statement = `${statement[1]!.toLowerCase()} ${statement[2]}`;
  const frames = String(e.stack ?? '')
    .split('\n')
    .filter((line) => line.trim().startsWith('at '));
  e.stack = [`${String(e.type ?? e.name ?? 'Error')}: ${String(e.message)}`, ...frames].join('\n');
  for (const field of DATABASE_VALUE_FIELDS) delete e[field];
}

function serializeError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown> | undefined;
  for (let cur = out, depth = 0; cur && typeof cur === 'object' && depth < 5; cur = cur.cause as Record<string, unknown>, depth++) {
    if (isDatabaseError(cur)) cleanDatabaseError(cur);
  }
  return out;
}

const serializeErrorRedacted = (err: unknown) => redactSecrets(serializeError(err));

/** How stale buffered log output may get: the buffer is written at least this often. */
const LOG_FLUSH_MS = 250;

/**
 * The default destination: stdout (or `dest`), buffered. pino's default writes every line with its own
 * write(2); with an access-log line per request that syscall was the largest cost of
 * logging (bench/api.bench.ts `--log-level=info`: ~10 µs of a ~180 µs request). Buffered,
 * lines are written 4 KiB at a time, and at least every LOG_FLUSH_MS; pino flushes the
 * buffer on a normal exit (and `main.ts` exits through it on a fatal error). Cost: a
 * process killed outright (SIGKILL, OOM) loses its last lines, up to 250 ms of them.
 */
export function bufferedDestination(dest: number | string = 1): DestinationStream {
  const stream = pino.destination({ dest, minLength: 4096, sync: false });
  setInterval(() => stream.flush(), LOG_FLUSH_MS).unref();
  return stream;
}

/**
 * Where a 'silent' logger writes: nowhere. It gets no buffered stream, so no flush timer,
 * which would otherwise run for the rest of the process: the tests create a silent logger
 * per app, dozens in one jest worker, each timer writing an empty buffer 4 times a second.
 */
const NOWHERE: DestinationStream = { write: () => undefined };

export function createLogger(level: string, destination: DestinationStream = level === 'silent' ? NOWHERE : bufferedDestination()): Logger {
  const options = {
    level,
    base: { service: 'workflow-automation' },
    formatters: { log: (object: Record<string, unknown>) => redactSecrets(object) as Record<string, unknown> },
    serializers: { err: serializeErrorRedacted, error: serializeErrorRedacted },
    // trace_id / span_id on every line written inside a span; no mixin at all without tracing.
    ...(tracingOn() ? { mixin: traceLogFields } : {}),
  };
  const logger = pino(options, destination);
  // pino applies no formatter to a child's bindings; every child (and its children, which
  // inherit this method) hands them over redacted.
  const child = logger.child;
  logger.child = function (this: Logger, bindings, childOptions) {
    return child.call(this, redactSecrets(bindings) as typeof bindings, childOptions);
  } as Logger['child'];
  return logger;
}

export type { Logger };
