import { Writable } from 'node:stream';
import pino from 'pino';
import type { AnyRoute } from '../../../src/http/route';
import { ROUTE_FACTORIES } from '../../../src/app';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('HTTP contract', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  afterAll(() => t.close());

  it('answers unknown routes 404 NOT_FOUND and wrong methods 405 METHOD_NOT_ALLOWED in the envelope', async () => {
    const missing = await t.request.get('/v1/nothing-here').set(bearer(key));
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) } });
    const wrong = await t.request.patch('/v1/workflows').set(bearer(key));
    expect(wrong.status).toBe(405);
    expect(wrong.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(wrong.headers.allow).toContain('GET');
  });

  it('returns X-Request-Id, echoing a well-formed incoming one', async () => {
    const fresh = await t.request.get('/healthz');
    expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await t.request.get('/healthz').set('X-Request-Id', 'trace-abc.123');
    expect(echoed.headers['x-request-id']).toBe('trace-abc.123');
    const refused = await t.request.get('/healthz').set('X-Request-Id', 'bad id with spaces');
    expect(refused.headers['x-request-id']).not.toBe('bad id with spaces');
  });

  it('serves /healthz, /readyz and Prometheus /metrics', async () => {
    expect((await t.request.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await t.request.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok', temporal: 'ok' } });
    await t.request.get('/v1/workflows').set(bearer(key));
    const metrics = await t.request.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toContain('text/plain');
    expect(metrics.text).toMatch(/http_requests_total\{method="GET",route="\/v1\/workflows",status="200"\} \d+/);
    expect(metrics.text).toContain('process_cpu_seconds_total');
  });

  it('documents every route, with its errors, in the OpenAPI 3.1 document', async () => {
    const res = await t.request.get('/v1/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    const routes: AnyRoute[] = ROUTE_FACTORIES.flatMap((f) => f(t.services));
    expect(routes.length).toBeGreaterThan(10);
    for (const route of routes) {
      const op = doc.paths[route.path]?.[route.method];
      expect({ route: `${route.method} ${route.path}`, documented: op !== undefined }).toEqual({
        route: `${route.method} ${route.path}`,
        documented: true,
      });
      // A route any valid credential may use (scope null: GET /v1/me) can refuse no scope.
      const refusals = route.scope === null ? ['401', '429'] : ['401', '403', '429'];
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(refusals));
      if (route.scope === null) expect(op.responses['403']).toBeUndefined();
      for (const [status] of route.errors ?? []) expect(op.responses[String(status)]).toBeDefined();
    }
    expect(doc.paths['/hooks/triggers/{trigger_id}'].post.responses['401'].description).toContain('INVALID_SIGNATURE');
    const create = doc.paths['/v1/workflows'].post;
    expect(create.responses['422'].description).toContain('INVALID_NODE_CONFIG');
    expect(create.requestBody.content['application/json'].schema).toBeDefined();
  });

  it('serves the API reference at /docs from local assets only', async () => {
    const page = await t.request.get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    const srcs = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(srcs.length).toBeGreaterThan(0);
    for (const src of srcs) {
      expect(src.startsWith('/')).toBe(true);
      const asset = await t.request.get(src);
      expect(asset.status).toBe(200);
    }
    expect((await t.request.get('/docs/assets/../../package.json')).status).toBe(404);
  });

  describe('Idempotency-Key', () => {
    const post = (idem: string, body: object, k = key) =>
      t.request.post('/v1/workflows').set(bearer(k)).set('Idempotency-Key', idem).send(body);

    it('replays the first response for the same key and body, creating one workflow', async () => {
      const first = await post('idem-1', { name: 'Idem', channel: 'voice' });
      expect(first.status).toBe(201);
      const second = await post('idem-1', { name: 'Idem', channel: 'voice' });
      expect(second.status).toBe(201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect(await t.query("select id from workflows where name = 'Idem'")).toHaveLength(1);
    });

    it('answers 409 IDEMPOTENCY_KEY_REUSED for the same key with another body', async () => {
      await post('idem-2', { name: 'Idem two', channel: 'voice' }).expect(201);
      const reused = await post('idem-2', { name: 'Idem three', channel: 'voice' });
      expect(reused.status).toBe(409);
      expect(reused.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await t.query("select id from workflows where name = 'Idem three'")).toHaveLength(0);
    });

    it('stores nothing for a request that failed validation, so the corrected retry runs', async () => {
      const bad = await post('idem-3', { channel: 'voice' });
      expect(bad.status).toBe(400);
      const good = await post('idem-3', { name: 'Idem fixed', channel: 'voice' });
      expect(good.status).toBe(201);
      expect(good.headers['idempotent-replayed']).toBeUndefined();
    });

    it('replays stored client errors such as a duplicate name', async () => {
      await post('idem-4a', { name: 'Idem dup', channel: 'voice' }).expect(201);
      const dup = await post('idem-4b', { name: 'Idem dup', channel: 'voice' });
      expect(dup.status).toBe(409);
      const replay = await post('idem-4b', { name: 'Idem dup', channel: 'voice' });
      expect(replay.status).toBe(409);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(dup.body);
    });

    it('scopes keys to the organization', async () => {
      const other = (await t.createKey('admin', await t.createOrg())).key;
      await post('idem-5', { name: 'Idem org', channel: 'voice' }).expect(201);
      const theirs = await post('idem-5', { name: 'Idem org', channel: 'voice' }, other);
      expect(theirs.status).toBe(201);
      expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    });

    it('creates exactly one workflow when the same key arrives concurrently', async () => {
      const body = { name: 'Idem race', channel: 'voice' };
      const results = await Promise.all(Array.from({ length: 8 }, () => post('idem-6', body)));
      for (const r of results) expect([201, 409]).toContain(r.status);
      for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');
      expect(await t.query("select id from workflows where name = 'Idem race'")).toHaveLength(1);
    });

    it('forgets a key after 24 h: the same key runs again, and old records are purged', async () => {
      await post('idem-7', { name: 'Idem old', channel: 'voice' }).expect(201);
      await t.query("update idempotency_keys set created_at = now() - interval '25 hours' where key = 'idem-7'");
      const again = await post('idem-7', { name: 'Idem new', channel: 'voice' });
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      await t.query("update idempotency_keys set created_at = now() - interval '25 hours' where key = 'idem-7'");
      expect(await t.services.idempotency.purgeExpired()).toBeGreaterThanOrEqual(1);
      expect(await t.query("select key from idempotency_keys where key = 'idem-7'")).toHaveLength(0);
      expect(await t.query("select key from idempotency_keys where key = 'idem-1'")).toHaveLength(1);
    });

    it('rejects an oversized or non-ASCII key', async () => {
      const res = await post('k'.repeat(256), { name: 'Idem long', channel: 'voice' });
      expect(res.status).toBe(400);
      expect(res.body.error.field).toBe('Idempotency-Key');
    });
  });
});

describe('logs', () => {
  it('writes one JSON line per request with the request id and never the credential', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const t = await createTestApp({}, { logger: pino({ level: 'info' }, sink) });
    try {
      const { key } = await t.createKey('admin');
      const created = await t.request.post('/v1/api-keys').set(bearer(key)).send({ name: 'logged', permission: 'read' });
      const secondKey: string = created.body.data.key;
      const res = await t.request.get('/v1/workflows?search=x').set(bearer(secondKey));
      await t.request.get('/v1/workflows').set(bearer('wfa_wrongkey'));
      const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const access = entries.find((e) => e.request_id === res.headers['x-request-id']);
      expect(access).toMatchObject({ msg: 'request', method: 'GET', path: '/v1/workflows', status: 200, route: '/v1/workflows' });
      const all = lines.join('\n');
      for (const secret of [key, secondKey, 'wfa_wrongkey']) expect(all).not.toContain(secret);
    } finally {
      await t.close();
    }
  });
});
