import { freePort } from '../../helpers/process';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('rate limits', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_HOUR: '20', RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '3' });
  });
  afterAll(() => t.close());

  it('sends the three headers on every authenticated response, errors included', async () => {
    const { key } = await t.createKey('admin');
    // The window starts with the key's first request: its reset is an hour after an instant
    // between these two readings of the clock (rounded up to the second).
    const before = Date.now();
    const ok = await t.request.get('/v1/workflows').set(bearer(key));
    const after = Date.now();
    expect(ok.headers['x-ratelimit-limit']).toBe('20');
    expect(ok.headers['x-ratelimit-remaining']).toBe('19');
    const reset = Number(ok.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 3_600_000) / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil((after + 3_600_000) / 1000));
    const missing = await t.request.get('/v1/workflows/wf_missing').set(bearer(key));
    expect(missing.status).toBe(404);
    expect(missing.headers['x-ratelimit-remaining']).toBe('18');
    const invalid = await t.request.post('/v1/workflows').set(bearer(key)).send({});
    expect(invalid.status).toBe(400);
    expect(invalid.headers['x-ratelimit-limit']).toBeDefined();
  });

  it('lets exactly N of N+k concurrent requests through and answers the rest 429 with retry_after', async () => {
    const { key } = await t.createKey('read');
    const responses = await Promise.all(Array.from({ length: 30 }, () => t.request.get('/v1/workflows').set(bearer(key))));
    const passed = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(passed).toHaveLength(20);
    expect(limited).toHaveLength(10);
    const one = limited[0]!;
    expect(one.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: expect.any(Number) });
    expect(one.body.error.retry_after).toBeGreaterThan(0);
    expect(one.headers['retry-after']).toBe(String(one.body.error.retry_after));
    expect(one.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('applies the per-operation limit besides the credential limit and reports the tighter one', async () => {
    const { key } = await t.createKey('read_write');
    for (let i = 0; i < 3; i++) {
      const res = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: `rl ${i}`, channel: 'voice' });
      expect(res.status).toBe(201);
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      expect(res.headers['x-ratelimit-remaining']).toBe(String(2 - i));
    }
    const refused = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'rl 3', channel: 'voice' });
    expect(refused.status).toBe(429);
    expect(await t.query("select 1 from workflows where name = 'rl 3'")).toHaveLength(0);
    const read = await t.request.get('/v1/workflows').set(bearer(key));
    expect(read.status).toBe(200);
    expect(read.headers['x-ratelimit-limit']).toBe('20');
  });

  it("checks an api trigger's hourly limit in the same single check: a refused fire counts against no limit", async () => {
    const { key } = await t.createKey('admin');
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'rl fire', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x' }] } });
    expect((await t.request.post(`/v1/workflows/${wf.body.data.id}/activate`).set(bearer(key))).status).toBe(200);
    const trigger = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'rl fire', type: 'api', workflow_id: wf.body.data.id, configuration: { rate_limit: 1 } });
    expect(trigger.status).toBe(201);
    const endpoint = trigger.body.data.configuration.endpoint as string;
    expect((await t.request.post(endpoint).set(bearer(key)).send({ n: 1 })).status).toBe(201); // 4th counted request
    for (let i = 0; i < 5; i++) {
      const refused = await t.request.post(endpoint).set(bearer(key)).send({ n: 2 });
      expect(refused.status).toBe(429);
      expect(refused.headers['x-ratelimit-limit']).toBe('1');
      expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    }
    const read = await t.request.get('/v1/workflows').set(bearer(key));
    expect(read.headers['x-ratelimit-limit']).toBe('20');
    expect(read.headers['x-ratelimit-remaining']).toBe(String(20 - 5));
  });

  it('a message over the limit is refused and records nothing; once refused, its matching read is not started beside the check', async () => {
    const { key, organizationId } = await t.createKey('admin');
    // The route reads its matching triggers and workflows while the limit is checked: count those reads.
    const pool = t.services.hotPool;
    const query = pool.query.bind(pool) as (...a: unknown[]) => unknown;
    let reads = 0;
    pool.query = ((...a: unknown[]) => {
      if ((a[0] as { name?: string }).name === 'inbound-message-read') reads++;
      return query(...a);
    }) as typeof pool.query;
    try {
      const send = (i: number) => t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: `rl-${i}`, message: 'hi' });
      const statuses = (await Promise.all(Array.from({ length: 22 }, (_, i) => send(i)))).map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(20);
      expect(statuses.filter((s) => s === 429)).toHaveLength(2);
      const recorded = await t.query<{ n: number }>('select count(*)::int as n from messages where organization_id = ?', [organizationId]);
      expect(recorded[0]!.n).toBe(20);

      const readsBefore = reads;
      const refused = await send(99);
      expect(refused.status).toBe(429);
      expect(reads).toBe(readsBefore);
      expect(await t.query("select 1 from customers where external_id = 'rl-99'")).toHaveLength(0);
    } finally {
      pool.query = query as typeof pool.query;
    }
  });

  it("counts every execution read, a workflow's or a trigger's, as a resource read (not an execution operation)", async () => {
    const reads = await createTestApp({ DATABASE_URL: t.databaseUrl, RATE_LIMIT_RESOURCE_READ_PER_HOUR: '6', RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '9' });
    try {
      const { key: writer } = await t.createKey('admin');
      const wf = await t.request.post('/v1/workflows').set(bearer(writer)).send({ name: 'rl reads', channel: 'voice' });
      const trigger = await t.request
        .post('/v1/triggers')
        .set(bearer(writer))
        .send({ name: 'rl reads', type: 'message', workflow_id: wf.body.data.id, configuration: { keywords: ['hi'] } });
      expect(trigger.status).toBe(201);
      const { key } = await t.createKey('read');
      const paths = [
        `/v1/workflows/${wf.body.data.id}/executions`,
        `/v1/triggers/${trigger.body.data.id}/executions`,
        `/v1/workflows/${wf.body.data.id}/executions/exec_missing`,
        `/v1/triggers/${trigger.body.data.id}/executions/tex_missing`,
      ];
      // One budget (resource_read, 6/h) for all four: each read reports it and spends from it.
      for (const [i, path] of paths.entries()) {
        const res = await reads.request.get(path).set(bearer(key));
        expect([200, 404]).toContain(res.status);
        expect(res.headers['x-ratelimit-limit']).toBe('6');
        expect(res.headers['x-ratelimit-remaining']).toBe(String(5 - i));
      }
    } finally {
      await reads.close();
    }
  });

  it('leaves no counter without an expiry in Redis', async () => {
    const keys = await t.services.redis.keys(`${t.config.REDIS_KEY_PREFIX}rl:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) expect(await t.services.redis.pttl(k)).toBeGreaterThan(0);
  });

  it('keeps serving and limiting in process memory while Redis is unreachable', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const offline = await createTestApp({ DATABASE_URL: t.databaseUrl, REDIS_URL: deadRedis, RATE_LIMIT_CREDENTIAL_PER_HOUR: '5' });
    try {
      const { key } = await t.createKey('read');
      const statuses: number[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await offline.request.get('/v1/workflows').set(bearer(key));
        statuses.push(res.status);
        expect(res.headers['x-ratelimit-limit']).toBe('5');
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
      const ready = await offline.request.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toMatchObject({ postgres: 'ok', redis: 'unavailable' });
    } finally {
      await offline.close();
    }
  });
});
