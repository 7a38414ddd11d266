/**
 * Owns the JSON logger (pino). Secrets never reach a log line:
 * - `redact` censors secret-like fields (secret, key, token, password, authorization,
 *   signatures, cookies) at the top level and nested up to four levels deep;
 * - the `err` serializer cleans database errors. MikroORM inlines the parameter values
 *   into the SQL it sends, knex prefixes that SQL to the error message, and MikroORM appends
 *   PostgreSQL's `detail` ("Failing row contains (...)", every column's value): so a failed
 *   INSERT of a webhook would log its signing secret in `message` and `stack`. For those
 *   errors only PostgreSQL's own message, the statement's verb and table, the SQLSTATE and
 *   the schema/table/column/constraint names are kept.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

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

/** `name`, `*.name`, `*.*.name`, ... : pino's redaction has no recursive wildcard. */
export const REDACT_PATHS = SECRET_FIELDS.flatMap((name) => {
  const field = /^[A-Za-z_$][\w$]*$/.test(name) ? name : `["${name}"]`;
  return [0, 1, 2, 3, 4].map((depth) => `${'*.'.repeat(depth)}${field}`.replace(/\.\[/g, '['));
});

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    base: { service: 'workflow-automation' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError, error: serializeError },
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
