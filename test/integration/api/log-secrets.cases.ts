/**
 * Secrets never reach the logs: a failed INSERT carrying a webhook's signing secret is
 * logged without the statement's parameter values or the row PostgreSQL echoes back, and
 * secret-like fields are redacted at any depth.
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/logger';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('secrets in logs', () => {
  let t: TestApp;
  const lines: string[] = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    t = await createTestApp({}, { logger: createLogger('info', sink) });
  });
  afterAll(() => t.close());

  it('logs a failed insert of a webhook without its signing secret', async () => {
    const { key } = await t.createKey('admin');
    // Every insert now fails inside PostgreSQL, as a broken migration or a full disk would.
    await t.query('alter table webhooks add constraint refuse_all check (false) not valid');
    const secret = 'Sup3r-Secret-Signing-Value-' + Date.now();
    const res = await t.request
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: 'https://127.0.0.1:9/hooks', events: ['workflow.completed'], secret });
    expect(res.status).toBe(500);

    const entry = lines.map((l) => JSON.parse(l) as { msg?: string; request_id?: string; err?: Record<string, unknown> }).find((e) => e.msg === 'unhandled error');
    expect(entry?.request_id).toBe(res.headers['x-request-id']);
    // The error stays useful to an operator: what failed and which constraint.
    expect(entry?.err).toMatchObject({
      type: 'CheckConstraintViolationException',
      statement: 'insert into "webhooks"',
      constraint: 'refuse_all',
      message: 'new row for relation "webhooks" violates check constraint "refuse_all"',
    });
    const all = lines.join('\n');
    expect(all).not.toContain(secret);
    expect(all).not.toContain('Failing row');
  });

  it('redacts secret, key, token, password and authorization fields at any depth', () => {
    const start = lines.length;
    createLogger('info', {
      write: (line: string) => {
        lines.push(line);
      },
    }).info(
      {
        secret: 'v-top',
        webhook: { secret: 'v-nested', config: { password: 'v-deep', auth: { token: 'v-deeper', key: 'v-key' } } },
        req: { headers: { authorization: 'Bearer v-auth', 'x-service-signature': 'v-sig' } },
      },
      'redaction probe',
    );
    const out = lines.slice(start).join('\n');
    expect(out).toContain('redaction probe');
    for (const value of ['v-top', 'v-nested', 'v-deep', 'v-deeper', 'v-key', 'v-auth', 'v-sig']) expect(out).not.toContain(value);
  });

  it('redacts in arrays, child bindings and errors, and leaves the logged objects as they were', () => {
    const start = lines.length;
    const logged = { hooks: [{ url: 'https://example.com', secret: 'v-array' }], count: 2 };
    const failure = Object.assign(new Error('boom'), { token: 'v-error' });
    const logger = createLogger('info', {
      write: (line: string) => {
        lines.push(line);
      },
    }).child({ client: { client_secret: 'v-binding', id: 'c1' } });
    logger.info(logged, 'array probe');
    logger.error({ err: failure }, 'error probe');
    const out = lines.slice(start).join('\n');
    for (const value of ['v-array', 'v-binding', 'v-error']) expect(out).not.toContain(value);
    const [arrayLine, errorLine] = lines.slice(start).map((l) => JSON.parse(l) as Record<string, any>);
    expect(arrayLine).toMatchObject({ hooks: [{ url: 'https://example.com', secret: '[redacted]' }], count: 2, client: { id: 'c1' } });
    expect(errorLine!.err).toMatchObject({ message: 'boom', token: '[redacted]', stack: expect.stringContaining('boom') });
    expect(logged.hooks[0]!.secret).toBe('v-array');
    expect(failure.token).toBe('v-error');
  });
});
