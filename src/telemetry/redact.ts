/**
 * No secret leaves the process in a span. Every span passes through RedactingSpanExporter
 * on its way to the OTLP exporter (the service's own spans, the Temporal workflow spans
 * that come out of the sandbox, all of them), which:
 * - replaces the literals of SQL statements (`db.statement`, `db.query.text`) with `?`:
 *   MikroORM inlines parameter values into the SQL it sends, so the pg instrumentation
 *   would otherwise record a webhook's signing secret or an API key's hash;
 * - censors attributes named like credentials (authorization, cookie, signature, secret,
 *   password, token, api key), wherever an instrumentation puts them;
 * - censors credential-like query parameters in recorded URLs;
 * - cuts SQL literals and PostgreSQL's "Failing row contains (…)" detail out of error
 *   messages (span status and exception events): knex prefixes the SQL it ran to the error.
 * Hand-written because no OpenTelemetry JS package redacts spans; it is the one exit, so
 * an instrumentation added later is covered too.
 */
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter, TimedEvent } from '@opentelemetry/sdk-trace-base';

const CENSOR = '[redacted]';
const SECRET_NAME = /authorization|cookie|signature|secret|password|passwd|token|api[-_.]?key|credential/i;
const SQL_ATTRIBUTES = new Set(['db.statement', 'db.query.text']);
const URL_ATTRIBUTES = new Set(['http.url', 'url.full', 'http.target', 'url.query']);
const MESSAGE_ATTRIBUTES = new Set(['exception.message', 'exception.stacktrace']);
/** OAuth's authorization code travels in a query string too. */
const SECRET_QUERY_PARAM = (name: string) => SECRET_NAME.test(name) || name === 'code' || name === 'sig';

/** `$$…$$` and `$tag$…$tag$` strings. */
const DOLLAR_QUOTED = /\$([A-Za-z_]\w*)?\$[\s\S]*?\$\1\$/g;
/** `'…'` and `E'…'` strings, with `''` and backslash escapes… */
const QUOTED = /(?:\b[eE])?'(?:[^'\\]|''|\\[\s\S])*'/g;
/** …or, in SQL, one left open, up to the end (a cut statement must not show its tail). */
const QUOTED_OR_UNTERMINATED = /(?:\b[eE])?'(?:[^'\\]|''|\\[\s\S])*'?/g;

/**
 * `sql` with every literal replaced by `?`: quoted strings (with '' and E'\'' escapes),
 * dollar-quoted strings and numbers. Identifiers, keywords and `$1` placeholders stay, so
 * the statement still reads as what ran.
 */
export function sanitizeSql(sql: string): string {
  return sql
    .replace(DOLLAR_QUOTED, '?')
    .replace(QUOTED_OR_UNTERMINATED, '?')
    .replace(/(?<![\w$."])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b/g, '?');
}

/**
 * An error message (or stack) without SQL string literals or a failing row's values.
 * Numbers stay (a stack's line numbers, a status code), and so does an unpaired quote.
 */
export function sanitizeMessage(message: string): string {
  return message
    .replace(/\n - (detail|hint): [\s\S]*$/, '')
    .replace(/Failing row contains \([\s\S]*?\)\.?/g, 'Failing row contains (…).')
    .replace(DOLLAR_QUOTED, '?')
    .replace(QUOTED, '?');
}

function sanitizeUrl(value: string): string {
  const withoutUser = value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@?#]*@/i, '$1');
  const start = withoutUser.indexOf('?');
  if (start === -1) return withoutUser;
  const [query, fragment] = withoutUser.slice(start + 1).split('#', 2) as [string, string | undefined];
  const cleaned = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = decodeURIComponentSafe(eq === -1 ? pair : pair.slice(0, eq));
      return eq !== -1 && SECRET_QUERY_PARAM(name) ? `${pair.slice(0, eq)}=${CENSOR}` : pair;
    })
    .join('&');
  return `${withoutUser.slice(0, start + 1)}${cleaned}${fragment === undefined ? '' : `#${fragment}`}`;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function redactValue(key: string, value: AttributeValue | undefined): AttributeValue | undefined {
  if (value === undefined) return value;
  if (SECRET_NAME.test(key)) return CENSOR;
  if (typeof value !== 'string') return value;
  if (SQL_ATTRIBUTES.has(key)) return sanitizeSql(value);
  if (URL_ATTRIBUTES.has(key)) return sanitizeUrl(value);
  if (MESSAGE_ATTRIBUTES.has(key)) return sanitizeMessage(value);
  return value;
}

/** The attributes with every secret censored; the same object when nothing changed. */
export function redactAttributes(attributes: Attributes): Attributes {
  let copy: Attributes | undefined;
  for (const key of Object.keys(attributes)) {
    const value = attributes[key];
    const redacted = redactValue(key, value);
    if (redacted !== value) (copy ??= { ...attributes })[key] = redacted;
  }
  return copy ?? attributes;
}

function redactEvent(event: TimedEvent): TimedEvent {
  if (!event.attributes) return event;
  const attributes = redactAttributes(event.attributes);
  return attributes === event.attributes ? event : { ...event, attributes };
}

/**
 * The span as exported: a view over the original (its prototype) with cleaned attributes,
 * events and status, so methods like `spanContext()` keep working on both the SDK's spans
 * and the plain objects the Temporal sink rebuilds from the workflow sandbox.
 */
export function redactSpan(span: ReadableSpan): ReadableSpan {
  const attributes = redactAttributes(span.attributes);
  const events = span.events.map(redactEvent);
  const message = span.status.message === undefined ? undefined : sanitizeMessage(span.status.message);
  const eventsChanged = events.some((e, i) => e !== span.events[i]);
  if (attributes === span.attributes && !eventsChanged && message === span.status.message) return span;
  return Object.create(span, {
    attributes: { value: attributes, enumerable: true },
    events: { value: events, enumerable: true },
    status: { value: { ...span.status, ...(message === undefined ? {} : { message }) }, enumerable: true },
  }) as ReadableSpan;
}

export class RedactingSpanExporter implements SpanExporter {
  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(spans.map(redactSpan), resultCallback);
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
