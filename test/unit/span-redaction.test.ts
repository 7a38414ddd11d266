/**
 * What leaves the process in a span (src/telemetry/redact.ts): SQL without its literals,
 * no credential-named attribute, no secret query parameter, no failing row in an error.
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { RedactingSpanExporter, redactSpan, sanitizeMessage, sanitizeSql } from '../../src/telemetry/redact';

const SECRET = 'whsec_Zx9-secret';

function span(fields: Partial<ReadableSpan>): ReadableSpan {
  const spanContext = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 };
  return { name: 'pg.query:INSERT', attributes: {}, events: [], status: { code: 0 }, spanContext: () => spanContext, ...fields } as unknown as ReadableSpan;
}

describe('sanitizeSql', () => {
  it('replaces the literals MikroORM inlines, keeping identifiers, keywords and placeholders', () => {
    const sql = `insert into "webhooks" ("id", "secret", "max_retries", "t0") values ('wh_1', '${SECRET}', 3, E'a\\'b''c') returning "id"`;
    expect(sanitizeSql(sql)).toBe(`insert into "webhooks" ("id", "secret", "max_retries", "t0") values (?, ?, ?, ?) returning "id"`);
    expect(sanitizeSql('select * from t0 where a = $1 and b = -2.5e3 limit 10')).toBe('select * from t0 where a = $1 and b = ? limit ?');
    expect(sanitizeSql(`select $tag$ ${SECRET} $tag$, $$x$$`)).toBe('select ?, ?');
  });

  it('hides an unterminated literal to the end', () => {
    expect(sanitizeSql(`update t set s = '${SECRET}`)).toBe('update t set s = ?');
  });
});

describe('sanitizeMessage', () => {
  it("drops knex's SQL literals and PostgreSQL's failing row", () => {
    const message = `insert into "webhooks" ("secret") values ('${SECRET}') - null value in column "url"\n - detail: Failing row contains (wh_1, ${SECRET}).`;
    expect(sanitizeMessage(message)).toBe('insert into "webhooks" ("secret") values (?) - null value in column "url"');
    expect(sanitizeMessage(`Failing row contains (wh_1, ${SECRET}).`)).toBe('Failing row contains (…).');
    // A stack keeps its line numbers.
    expect(sanitizeMessage(`Error: boom '${SECRET}'\n    at run (/app/src/x.ts:12:5)`)).toBe('Error: boom ?\n    at run (/app/src/x.ts:12:5)');
  });
});

describe('redactSpan', () => {
  it('censors credential-named attributes and secret query parameters, cleans statements and errors', () => {
    const original = span({
      attributes: {
        'db.statement': `select 1 from api_keys where key_hash = '${SECRET}'`,
        'http.request.header.authorization': [`Bearer ${SECRET}`],
        'http.request.header.cookie': [`sid=${SECRET}`],
        'http.request.header.webhook-signature': [SECRET],
        'url.full': `https://user:${SECRET}@example.com/cb?code=${SECRET}&state=ok&access_token=${SECRET}#frag`,
        'http.method': 'POST',
      },
      events: [{ name: 'exception', time: [0, 0], attributes: { 'exception.message': `insert ... values ('${SECRET}') - boom` } }],
      status: { code: 2, message: `update t set s = '${SECRET}' - boom` },
    });
    const out = redactSpan(original);
    expect(JSON.stringify({ a: out.attributes, e: out.events, s: out.status })).not.toContain(SECRET);
    expect(out.attributes).toMatchObject({
      'db.statement': 'select ? from api_keys where key_hash = ?',
      'http.request.header.authorization': '[redacted]',
      'http.request.header.cookie': '[redacted]',
      'http.request.header.webhook-signature': '[redacted]',
      'url.full': 'https://example.com/cb?code=[redacted]&state=ok&access_token=[redacted]#frag',
      'http.method': 'POST',
    });
    // The rest of the span reads through: name, ids (a method of the original).
    expect(out.name).toBe('pg.query:INSERT');
    expect(out.spanContext()).toEqual(original.spanContext());
    // The original is left as it was.
    expect(original.attributes['http.method']).toBe('POST');
    expect(String(original.attributes['db.statement'])).toContain(SECRET);
  });

  it('hands a span with nothing to hide over as it is', () => {
    const clean = span({ attributes: { 'http.route': '/v1/messages' } });
    expect(redactSpan(clean)).toBe(clean);
  });

  it('is what the exporter sends', () => {
    const sent: ReadableSpan[][] = [];
    const exporter = new RedactingSpanExporter({ export: (spans, cb) => (sent.push(spans), cb({ code: 0 })), shutdown: async () => {} });
    exporter.export([span({ attributes: { 'db.statement': `select '${SECRET}'` } })], () => undefined);
    expect(sent[0]![0]!.attributes['db.statement']).toBe('select ?');
  });
});
