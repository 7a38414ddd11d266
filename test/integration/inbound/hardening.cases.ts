/**
 * Inbound input that once crashed or fooled the service, through HTTP: deeply nested and
 * key-heavy JSON (on /v1 and on the signed webhook-trigger receiver, which needs no API
 * key), NUL characters in a receiver body, and signatures that must cover exactly what
 * becomes the execution input (the query string of a GET trigger, never the query string
 * of a POST), with Standard Webhooks replay protection.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { MAX_JSON_KEYS } from '../../../src/http/input-guard';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const hexSig = (secret: string, payload: string) => createHmac('sha256', Buffer.from(secret, 'utf8')).update(payload).digest('hex');
const standardHeaders = (secret: string, payload: string, opts: { id?: string; timestamp?: number } = {}) => {
  const id = opts.id ?? `msg_${randomUUID()}`;
  const ts = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${id}.${ts}.${payload}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${sig}` };
};
const nested = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

describe('inbound hardening', () => {
  let t: TestApp;
  let writer: string;
  let workflowId: string;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_HOUR: '100000', RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '100000', RATE_LIMIT_INBOUND_WEBHOOK_PER_MINUTE: '100000' });
    writer = (await t.createKey('read_write')).key;
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(writer))
      .send({ name: 'Hooked', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Ping' }] } });
    workflowId = wf.body.data.id;
    expect((await t.request.post(`/v1/workflows/${workflowId}/activate`).set(bearer(writer))).status).toBe(200);
  });
  afterAll(() => t.close());

  let n = 0;
  const webhookTrigger = async (method = 'POST') => {
    const res = await t.request
      .post('/v1/triggers')
      .set(bearer(writer))
      .send({ name: `Hook ${++n}`, type: 'webhook', workflow_id: workflowId, configuration: { method } });
    expect(res.status).toBe(201);
    return { id: res.body.data.id as string, path: new URL(res.body.data.configuration.url).pathname, secret: res.body.data.configuration.secret as string };
  };
  const firings = async (triggerId: string) => (await t.query<{ n: number }>('select count(*)::int as n from trigger_executions where trigger_id = ?', [triggerId]))[0]!.n;

  describe('nesting depth and key count', () => {
    it('refuses 1,000- and 10,000-level bodies and too many keys on /v1 with 400, storing nothing', async () => {
      for (const depth of [32, 1_000, 10_000]) {
        const body = `{"channel":"whatsapp","customer_id":"c1","message":"hi","metadata":${nested(depth)}}`;
        const res = await t.request.post('/v1/messages').set(bearer(writer)).set('Content-Type', 'application/json').send(body);
        expect({ depth, status: res.status, code: res.body.error?.code, message: res.body.error?.message }).toEqual({
          depth,
          status: 400,
          code: 'INVALID_REQUEST',
          message: 'JSON nesting is deeper than 32 levels',
        });
      }
      const many = Object.fromEntries(Array.from({ length: MAX_JSON_KEYS + 1 }, (_, i) => [`k${i}`, i]));
      const res = await t.request.post('/v1/messages').set(bearer(writer)).send({ channel: 'whatsapp', customer_id: 'c1', message: 'hi', metadata: many });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toBe(`JSON body has more than ${MAX_JSON_KEYS} object keys`);
      expect(await t.query('select id from messages')).toEqual([]);
    });

    it('accepts nesting up to the bound', async () => {
      // The body's own object is level 1; metadata's 31 levels make 32 (one more is refused above).
      const body = `{"channel":"whatsapp","customer_id":"c1","message":"no keyword here","metadata":${nested(31)}}`;
      const res = await t.request.post('/v1/messages').set(bearer(writer)).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(201);
    });

    it('refuses deep and NUL-carrying bodies on the signed webhook receiver with 400, firing nothing', async () => {
      const hook = await webhookTrigger();
      for (const [payload, message] of [
        [nested(1_000), 'JSON nesting is deeper than 32 levels'],
        [nested(10_000), 'JSON nesting is deeper than 32 levels'],
        ['{"order":"A\\u0000"}', 'order must not contain NUL characters'],
      ] as const) {
        const res = await t.request.post(hook.path).set('Content-Type', 'application/json').set('X-Service-Signature', hexSig(hook.secret, payload)).send(payload);
        expect({ status: res.status, code: res.body.error?.code, message: res.body.error?.message }).toEqual({ status: 400, code: 'INVALID_REQUEST', message });
      }
      expect(await firings(hook.id)).toBe(0);
    });
  });

  describe('what the signature covers', () => {
    it('never takes the query string of a POST trigger as input', async () => {
      const hook = await webhookTrigger();
      const res = await t.request.post(`${hook.path}?evil=1&order=999`).set('X-Service-Signature', hexSig(hook.secret, ''));
      expect(res.status).toBe(202);
      expect(res.body.data.input).not.toHaveProperty('evil');
      expect(res.body.data.input).not.toHaveProperty('order');
      const [row] = await t.query<{ input: Record<string, unknown> }>('select input from trigger_executions where id = ?', [res.body.data.id]);
      expect(row!.input).toEqual({});
    });

    it('signs the query string of a GET trigger: a signature is valid for its own query only', async () => {
      const hook = await webhookTrigger('GET');
      const ok = await t.request.get(`${hook.path}?order=1&item=a%20b`).set('X-Service-Signature', hexSig(hook.secret, 'order=1&item=a%20b'));
      expect(ok.status).toBe(202);
      expect(ok.body.data.input).toMatchObject({ order: '1', item: 'a b' });

      const reused = await t.request.get(`${hook.path}?order=999&item=a%20b`).set('X-Service-Signature', hexSig(hook.secret, 'order=1&item=a%20b'));
      expect(reused.status).toBe(401);
      expect(reused.body.error.code).toBe('INVALID_SIGNATURE');
      const emptySigned = await t.request.get(`${hook.path}?order=999`).set('X-Service-Signature', hexSig(hook.secret, ''));
      expect(emptySigned.status).toBe(401);
      expect(await firings(hook.id)).toBe(1);
    });
  });

  describe('Standard Webhooks replay protection', () => {
    it('accepts a fresh signed message once and refuses its replay, a stale timestamp and a wrong signature', async () => {
      const hook = await webhookTrigger();
      const payload = JSON.stringify({ order: 'B-7' });
      const headers = standardHeaders(hook.secret, payload);
      const send = (h: Record<string, string>) => t.request.post(hook.path).set('Content-Type', 'application/json').set(h).send(payload);

      const first = await send(headers);
      expect(first.status).toBe(202);
      expect(first.body.data.input).toMatchObject({ order: 'B-7' });
      const replay = await send(headers);
      expect(replay.status).toBe(409);
      expect(replay.body.error.code).toBe('WEBHOOK_REPLAYED');

      const stale = await send(standardHeaders(hook.secret, payload, { timestamp: Math.floor(Date.now() / 1000) - 301 }));
      expect(stale.status).toBe(401);
      expect(stale.body.error).toMatchObject({ code: 'INVALID_SIGNATURE', message: expect.stringContaining('webhook-timestamp') });
      // Past the tolerance by more than the second that flooring the timestamp can take off.
      const future = await send(standardHeaders(hook.secret, payload, { timestamp: Math.floor(Date.now() / 1000) + 303 }));
      expect(future.status).toBe(401);
      const wrong = await send(standardHeaders('another-secret-of-enough-length', payload));
      expect(wrong.status).toBe(401);
      const noId = await send({ ...standardHeaders(hook.secret, payload), 'webhook-id': '' });
      expect(noId.status).toBe(401);
      expect(await firings(hook.id)).toBe(1);
      expect(await t.services.redis.pttl(`${t.config.REDIS_KEY_PREFIX}hook-id:${hook.id}:${headers['webhook-id']}`)).toBeGreaterThan(0);
    });

    it('lets a sender retry a refused message with the same webhook-id', async () => {
      const hook = await webhookTrigger();
      const payload = JSON.stringify({ order: 'C-1' });
      const headers = standardHeaders(hook.secret, payload);
      await t.request.post(`/v1/triggers/${hook.id}/pause`).set(bearer(writer));
      const paused = await t.request.post(hook.path).set('Content-Type', 'application/json').set(headers).send(payload);
      expect(paused.status).toBe(409);
      expect(paused.body.error.code).toBe('TRIGGER_NOT_ACTIVE');
      await t.request.post(`/v1/triggers/${hook.id}/resume`).set(bearer(writer));
      const retried = await t.request.post(hook.path).set('Content-Type', 'application/json').set(headers).send(payload);
      expect(retried.status).toBe(202);
    });

    it('signs the query string of a GET trigger the same way', async () => {
      const hook = await webhookTrigger('GET');
      const headers = standardHeaders(hook.secret, 'ticket=42');
      expect((await t.request.get(`${hook.path}?ticket=43`).set(headers)).status).toBe(401);
      const ok = await t.request.get(`${hook.path}?ticket=42`).set(headers);
      expect(ok.status).toBe(202);
      expect(ok.body.data.input).toMatchObject({ ticket: '42' });
    });
  });
});
