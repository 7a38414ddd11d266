import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const workflowConfig = { nodes: [{ id: 'hi', type: 'message', content: 'Hello there' }] };

describe('triggers API', () => {
  let t: TestApp;
  let admin: string;
  let writer: string;
  let reader: string;
  let workflowId: string;

  beforeAll(async () => {
    // Bad-input cases count against the hourly limits too; this file tests behaviour, not limits.
    t = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_HOUR: '100000', RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '100000', RATE_LIMIT_RESOURCE_READ_PER_HOUR: '100000' });
    admin = (await t.createKey('admin')).key;
    writer = (await t.createKey('read_write')).key;
    reader = (await t.createKey('read')).key;
    const wf = await t.request.post('/v1/workflows').set(bearer(writer)).send({ name: 'Support', channel: 'whatsapp', configuration: workflowConfig });
    workflowId = wf.body.data.id;
  });
  afterAll(() => t.close());

  const create = (body: object, key = writer) => t.request.post('/v1/triggers').set(bearer(key)).send(body);
  const countTriggers = async () => (await t.query<{ n: number }>('select count(*)::int as n from triggers'))[0]?.n;
  let n = 0;
  const messageTrigger = (extra: object = {}) => ({
    name: `Greeting ${++n}`,
    type: 'message',
    workflow_id: workflowId,
    configuration: { keywords: ['hello', 'hi'], case_sensitive: false, exact_match: false, language: 'en' },
    ...extra,
  });

  it('creates an active message trigger with zero executions and gets it', async () => {
    const res = await create({ ...messageTrigger(), name: 'Hello trigger', channel: 'instagram' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^trg_/),
      name: 'Hello trigger',
      type: 'message',
      status: 'active',
      workflow_id: workflowId,
      channel: 'instagram',
      configuration: { keywords: ['hello', 'hi'], case_sensitive: false, exact_match: false, language: 'en' },
      created_at: expect.any(String),
      updated_at: expect.any(String),
      execution_count: 0,
      last_triggered: null,
    });
    const got = await t.request.get(`/v1/triggers/${res.body.data.id}`).set(bearer(reader));
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(res.body.data);
  });

  it('defaults the channel to the workflow channel and applies configuration defaults', async () => {
    const res = await create({ name: 'Defaults', type: 'message', workflow_id: workflowId, configuration: { keywords: ['x'] } });
    expect(res.status).toBe(201);
    expect(res.body.data.channel).toBe('whatsapp');
    expect(res.body.data.configuration).toEqual({ keywords: ['x'], case_sensitive: false, exact_match: false });
  });

  it('assigns a webhook trigger its url and a strong secret, and keeps the secret out of list items', async () => {
    const res = await create({ name: 'Hook', type: 'webhook', workflow_id: workflowId, configuration: { headers: { 'X-Source': 'crm' } } });
    expect(res.status).toBe(201);
    const { configuration, id } = res.body.data;
    expect(configuration.url).toBe(`${t.config.BASE_URL}/hooks/triggers/${id}`);
    expect(configuration.method).toBe('POST');
    expect(configuration.headers).toEqual({ 'x-source': 'crm' });
    expect(Buffer.from(configuration.secret.replace(/^whsec_/, ''), 'base64url').length).toBeGreaterThanOrEqual(24);
    const list = await t.request.get('/v1/triggers?type=webhook').set(bearer(reader));
    expect(list.body.data.find((x: { id: string }) => x.id === id).configuration.secret).toBeUndefined();
    const got = await t.request.get(`/v1/triggers/${id}`).set(bearer(reader));
    expect(got.body.data.configuration.secret).toBe(configuration.secret);

    const given = await create({ name: 'Hook 2', type: 'webhook', workflow_id: workflowId, configuration: { secret: 's'.repeat(32), method: 'PUT' } });
    expect(given.status).toBe(201);
    expect(given.body.data.configuration.secret).toBe('s'.repeat(32));
  });

  it('assigns an api trigger its endpoint and default rate limit', async () => {
    const res = await create({ name: 'Api', type: 'api', workflow_id: workflowId, configuration: { authentication: 'api_key', rate_limit: 10 } });
    expect(res.status).toBe(201);
    expect(res.body.data.configuration).toEqual({ authentication: 'api_key', rate_limit: 10, endpoint: `/v1/triggers/${res.body.data.id}/fire` });
    const dflt = await create({ name: 'Api default', type: 'api', workflow_id: workflowId, configuration: {} });
    expect(dflt.body.data.configuration.rate_limit).toBe(1000);
  });

  it('lists with pagination and filters by type, status and workflow_id', async () => {
    const org = await t.createOrg();
    const key = (await t.createKey('admin', org)).key;
    const wf = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'W', channel: 'voice' });
    const wf2 = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'W2', channel: 'voice' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await create(
        { name: `L${i}`, type: i < 3 ? 'message' : 'api', workflow_id: i === 4 ? wf2.body.data.id : wf.body.data.id, configuration: i < 3 ? { keywords: ['k'] } : {} },
        key,
      );
      ids.push(r.body.data.id);
    }
    await t.request.post(`/v1/triggers/${ids[0]}/pause`).set(bearer(key));
    const page = await t.request.get('/v1/triggers?page=2&limit=2').set(bearer(key));
    expect(page.status).toBe(200);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 5, pages: 3 });
    const byType = await t.request.get('/v1/triggers?type=api').set(bearer(key));
    expect(byType.body.data.map((x: { id: string }) => x.id).sort()).toEqual([ids[3], ids[4]].sort());
    const paused = await t.request.get('/v1/triggers?status=paused').set(bearer(key));
    expect(paused.body.data.map((x: { id: string }) => x.id)).toEqual([ids[0]]);
    const byWf = await t.request.get(`/v1/triggers?workflow_id=${wf2.body.data.id}`).set(bearer(key));
    expect(byWf.body.data.map((x: { id: string }) => x.id)).toEqual([ids[4]]);
    const bad = await t.request.get('/v1/triggers?type=sms').set(bearer(key));
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('type');
  });

  it('updates name and configuration only, validated against the trigger type', async () => {
    const { body } = await create(messageTrigger());
    const id = body.data.id;
    await new Promise((r) => setTimeout(r, 5));
    const res = await t.request.put(`/v1/triggers/${id}`).set(bearer(writer)).send({ name: 'Renamed', configuration: { keywords: ['bye'], exact_match: true } });
    expect(res.status).toBe(200);
    expect(res.body.data.name).toBe('Renamed');
    expect(res.body.data.configuration).toEqual({ keywords: ['bye'], case_sensitive: false, exact_match: true });
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThan(Date.parse(body.data.updated_at));

    const empty = await t.request.put(`/v1/triggers/${id}`).set(bearer(writer)).send({ configuration: { keywords: [] } });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toMatchObject({ code: 'INVALID_TRIGGER_CONFIG', field: 'configuration.keywords' });
    for (const bad of [{ type: 'api' }, { workflow_id: workflowId }, { status: 'paused' }, { execution_count: 9 }]) {
      const r = await t.request.put(`/v1/triggers/${id}`).set(bearer(writer)).send(bad);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
    }
    const got = await t.request.get(`/v1/triggers/${id}`).set(bearer(reader));
    expect(got.body.data).toEqual(res.body.data);
  });

  it('keeps a webhook secret and url across a PUT and refuses a different url', async () => {
    const { body } = await create({ name: 'Hook keep', type: 'webhook', workflow_id: workflowId, configuration: {} });
    const { id, configuration } = body.data;
    const same = await t.request.put(`/v1/triggers/${id}`).set(bearer(writer)).send({ configuration: { ...configuration, method: 'PATCH' } });
    expect(same.status).toBe(200);
    expect(same.body.data.configuration).toEqual({ ...configuration, method: 'PATCH' });
    const noSecret = await t.request.put(`/v1/triggers/${id}`).set(bearer(writer)).send({ configuration: { method: 'POST' } });
    expect(noSecret.body.data.configuration.secret).toBe(configuration.secret);
    const other = await t.request.put(`/v1/triggers/${id}`).set(bearer(writer)).send({ configuration: { url: 'https://evil.example/x' } });
    expect(other.status).toBe(400);
    expect(other.body.error).toMatchObject({ code: 'INVALID_TRIGGER_CONFIG', field: 'configuration.url' });
  });

  it("follows the contract's state table: pause from any state, every operation idempotent", async () => {
    const { body } = await create(messageTrigger());
    const id = body.data.id;
    const post = (op: string) => t.request.post(`/v1/triggers/${id}/${op}`).set(bearer(writer));
    const status = async () => (await t.request.get(`/v1/triggers/${id}`).set(bearer(reader))).body.data.status;

    // Resuming an active trigger answers 200 with the same state.
    const resumeActive = await post('resume');
    expect(resumeActive.status).toBe(200);
    expect(resumeActive.body.data).toEqual({ id, status: 'active', resumed_at: expect.any(String) });

    // active → paused; pausing again answers 200 with the same state and time.
    const paused = await post('pause');
    expect(paused.status).toBe(200);
    expect(paused.body.data).toEqual({ id, status: 'paused', paused_at: expect.any(String) });
    const pausedAgain = await post('pause');
    expect(pausedAgain.status).toBe(200);
    expect(pausedAgain.body.data).toEqual(paused.body.data);

    const resumed = await post('resume');
    expect(resumed.status).toBe(200);
    expect(resumed.body.data).toEqual({ id, status: 'active', resumed_at: expect.any(String) });
    expect(await status()).toBe('active');

    const activeAgain = await post('activate');
    expect(activeAgain.status).toBe(200);
    expect(activeAgain.body.data).toEqual({ id, status: 'active', activated_at: expect.any(String) });

    const off = await post('deactivate');
    expect(off.body.data).toEqual({ id, status: 'inactive', deactivated_at: expect.any(String) });
    expect((await post('deactivate')).status).toBe(200);
    // Resume is only from paused (or a no-op on active): an inactive trigger is not resumed.
    const resumeInactive = await post('resume');
    expect(resumeInactive.status).toBe(409);
    expect(resumeInactive.body.error.code).toBe('INVALID_STATE_TRANSITION');
    expect(await status()).toBe('inactive');
    // inactive → paused: "any → paused".
    const pauseInactive = await post('pause');
    expect(pauseInactive.status).toBe(200);
    expect(pauseInactive.body.data).toEqual({ id, status: 'paused', paused_at: expect.any(String) });
    expect(await status()).toBe('paused');
    expect(Date.parse(pauseInactive.body.data.paused_at)).toBeGreaterThan(Date.parse(paused.body.data.paused_at));

    const on = await post('resume');
    expect(on.body.data.status).toBe('active');
    await post('pause');
    expect((await post('deactivate')).body.data.status).toBe('inactive');
    expect(await status()).toBe('inactive');
  });

  it('rejects a duplicate name in the organization but allows it in another and after delete', async () => {
    const first = await create({ ...messageTrigger(), name: 'Unique' });
    expect(first.status).toBe(201);
    const before = await countTriggers();
    const dup = await create({ ...messageTrigger(), name: 'Unique' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'TRIGGER_ALREADY_EXISTS', field: 'name' });
    expect(await countTriggers()).toBe(before);

    const renamed = await create({ ...messageTrigger(), name: 'Other' });
    const clash = await t.request.put(`/v1/triggers/${renamed.body.data.id}`).set(bearer(writer)).send({ name: 'Unique' });
    expect(clash.status).toBe(409);

    const deleted = await t.request.delete(`/v1/triggers/${first.body.data.id}`).set(bearer(admin));
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: expect.stringContaining(first.body.data.id) });
    expect((await t.request.get(`/v1/triggers/${first.body.data.id}`).set(bearer(reader))).status).toBe(404);
    expect((await create({ ...messageTrigger(), name: 'Unique' })).status).toBe(201);
  });

  it('enforces scopes: read cannot write, read_write cannot delete', async () => {
    const { body } = await create(messageTrigger());
    const asReader = await create(messageTrigger(), reader);
    expect(asReader.status).toBe(403);
    expect(asReader.body.error.code).toBe('INSUFFICIENT_PERMISSIONS');
    expect((await t.request.post(`/v1/triggers/${body.data.id}/pause`).set(bearer(reader))).status).toBe(403);
    const del = await t.request.delete(`/v1/triggers/${body.data.id}`).set(bearer(writer));
    expect(del.status).toBe(403);
    expect((await t.request.get(`/v1/triggers/${body.data.id}`).set(bearer(reader))).status).toBe(200);
    expect((await t.request.get('/v1/triggers')).status).toBe(401);
  });

  it("answers 404 for another organization's trigger and workflow on every route, and changes nothing", async () => {
    const { body } = await create(messageTrigger());
    const id = body.data.id;
    const other = (await t.createKey('admin', await t.createOrg())).key;
    const calls = [
      t.request.get(`/v1/triggers/${id}`),
      t.request.put(`/v1/triggers/${id}`).send({ name: 'stolen' }),
      t.request.delete(`/v1/triggers/${id}`),
      t.request.post(`/v1/triggers/${id}/pause`),
      t.request.post(`/v1/triggers/${id}/deactivate`),
      t.request.get(`/v1/triggers/${id}/executions`),
      t.request.get(`/v1/triggers/${id}/metrics`),
      t.request.get(`/v1/triggers/${id}/executions/trgexec_nothing`),
    ];
    for (const call of calls) {
      const res = await call.set(bearer(other));
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('TRIGGER_NOT_FOUND');
    }
    const list = await t.request.get('/v1/triggers').set(bearer(other));
    expect(list.body.data).toEqual([]);
    const foreignWorkflow = await create(messageTrigger(), other);
    expect(foreignWorkflow.status).toBe(404);
    expect(foreignWorkflow.body.error).toMatchObject({ code: 'WORKFLOW_NOT_FOUND', field: 'workflow_id' });
    const got = await t.request.get(`/v1/triggers/${id}`).set(bearer(reader));
    expect(got.body.data).toEqual(body.data);
  });

  describe('bad input: a 4xx envelope naming the field, nothing created', () => {
    const long = 'x'.repeat(201);
    const cases: Array<[string, () => object, number, string, string?]> = [
      ['missing name', () => ({ ...messageTrigger(), name: undefined }), 400, 'MISSING_REQUIRED_FIELD', 'name'],
      ['missing type', () => ({ ...messageTrigger(), type: undefined }), 400, 'MISSING_REQUIRED_FIELD', 'type'],
      ['missing workflow_id', () => ({ ...messageTrigger(), workflow_id: undefined }), 400, 'MISSING_REQUIRED_FIELD', 'workflow_id'],
      ['missing configuration', () => ({ ...messageTrigger(), configuration: undefined }), 400, 'MISSING_REQUIRED_FIELD', 'configuration'],
      ['unknown type', () => ({ ...messageTrigger(), type: 'sms' }), 400, 'INVALID_REQUEST', 'type'],
      ['name of wrong type', () => ({ ...messageTrigger(), name: 42 }), 400, 'INVALID_REQUEST', 'name'],
      ['oversized name', () => ({ ...messageTrigger(), name: long }), 400, 'INVALID_REQUEST', 'name'],
      ['unknown field', () => ({ ...messageTrigger(), status: 'paused' }), 400, 'INVALID_REQUEST', 'status'],
      ['counter from the client', () => ({ ...messageTrigger(), execution_count: 3 }), 400, 'INVALID_REQUEST', 'execution_count'],
      ['unknown channel', () => ({ ...messageTrigger(), channel: 'fax' }), 400, 'INVALID_REQUEST', 'channel'],
      ['unknown workflow', () => ({ ...messageTrigger(), workflow_id: 'wf_missing' }), 404, 'WORKFLOW_NOT_FOUND', 'workflow_id'],
      ['empty keywords', () => messageTrigger({ configuration: { keywords: [] } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.keywords'],
      ['missing keywords', () => messageTrigger({ configuration: { exact_match: true } }), 400, 'MISSING_REQUIRED_FIELD', 'configuration.keywords'],
      ['blank keyword', () => messageTrigger({ configuration: { keywords: ['  '] } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.keywords[0]'],
      ['keyword of wrong type', () => messageTrigger({ configuration: { keywords: [1] } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.keywords[0]'],
      ['oversized keyword', () => messageTrigger({ configuration: { keywords: [long] } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.keywords[0]'],
      ['case_sensitive not boolean', () => messageTrigger({ configuration: { keywords: ['a'], case_sensitive: 'yes' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.case_sensitive'],
      ['bad language', () => messageTrigger({ configuration: { keywords: ['a'], language: 'english!' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.language'],
      ['unknown config field', () => messageTrigger({ configuration: { keywords: ['a'], regex: '.*' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.regex'],
      ['configuration not an object', () => messageTrigger({ configuration: 'hello' }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration'],
      ['cron with six fields', () => ({ name: 'c6', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '0 0 * * * *' } }), 422, 'INVALID_CRON_EXPRESSION', 'configuration.cron_expression'],
      ['cron out of range', () => ({ name: 'c61', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '61 * * * *' } }), 422, 'INVALID_CRON_EXPRESSION', 'configuration.cron_expression'],
      ['cron macro', () => ({ name: 'cm', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '@daily' } }), 422, 'INVALID_CRON_EXPRESSION', 'configuration.cron_expression'],
      ['cron not a string', () => ({ name: 'cn', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: 5 } }), 422, 'INVALID_CRON_EXPRESSION', 'configuration.cron_expression'],
      ['missing cron', () => ({ name: 'cx', type: 'schedule', workflow_id: workflowId, configuration: { timezone: 'UTC' } }), 400, 'MISSING_REQUIRED_FIELD', 'configuration.cron_expression'],
      ['unknown timezone', () => ({ name: 'tz', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '0 9 * * *', timezone: 'Mars/Olympus' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.timezone'],
      ['end before start', () => ({ name: 'se', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '0 9 * * *', start_date: '2030-02-01T00:00:00Z', end_date: '2030-01-01T00:00:00Z' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.end_date'],
      ['bad start date', () => ({ name: 'sd', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '0 9 * * *', start_date: 'tomorrow' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.start_date'],
      ['short webhook secret', () => ({ name: 'ws', type: 'webhook', workflow_id: workflowId, configuration: { secret: 'short' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.secret'],
      ['webhook url from client', () => ({ name: 'wu', type: 'webhook', workflow_id: workflowId, configuration: { url: 'https://example.com/x' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.url'],
      ['webhook method', () => ({ name: 'wm', type: 'webhook', workflow_id: workflowId, configuration: { method: 'TRACE' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.method'],
      ['webhook header value type', () => ({ name: 'wh', type: 'webhook', workflow_id: workflowId, configuration: { headers: { 'X-A': 1 } } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.headers.X-A'],
      ['webhook header name', () => ({ name: 'whn', type: 'webhook', workflow_id: workflowId, configuration: { headers: { 'bad header': 'v' } } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.headers.bad header'],
      ['api rate_limit zero', () => ({ name: 'a0', type: 'api', workflow_id: workflowId, configuration: { rate_limit: 0 } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.rate_limit'],
      ['api rate_limit fraction', () => ({ name: 'af', type: 'api', workflow_id: workflowId, configuration: { rate_limit: 1.5 } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.rate_limit'],
      ['api authentication', () => ({ name: 'aa', type: 'api', workflow_id: workflowId, configuration: { authentication: 'none' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.authentication'],
      ['api endpoint from client', () => ({ name: 'ae', type: 'api', workflow_id: workflowId, configuration: { endpoint: '/mine' } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.endpoint'],
      ['message config on an api trigger', () => ({ name: 'mx', type: 'api', workflow_id: workflowId, configuration: { keywords: ['a'] } }), 400, 'INVALID_TRIGGER_CONFIG', 'configuration.keywords'],
    ];
    it.each(cases)('%s', async (_label, body, status, code, field) => {
      const before = await countTriggers();
      const res = await create(body());
      expect(res.status).toBe(status);
      expect(res.body.error.code).toBe(code);
      if (field !== undefined) expect(res.body.error.field).toBe(field);
      expect(await countTriggers()).toBe(before);
    });

    it('rejects malformed JSON, a non-JSON body and an unknown trigger id', async () => {
      const malformed = await t.request.post('/v1/triggers').set(bearer(writer)).set('Content-Type', 'application/json').send('{"name":');
      expect(malformed.status).toBe(400);
      const text = await t.request.post('/v1/triggers').set(bearer(writer)).set('Content-Type', 'text/plain').send('name=x');
      expect(text.status).toBe(415);
      const missing = await t.request.get('/v1/triggers/trg_doesnotexist').set(bearer(reader));
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('TRIGGER_NOT_FOUND');
      const longId = await t.request.get(`/v1/triggers/${'x'.repeat(100)}`).set(bearer(reader));
      expect(longId.status).toBe(400);
    });
  });

  describe('executions and metrics queries', () => {
    let id: string;
    beforeAll(async () => {
      id = (await create(messageTrigger())).body.data.id;
    });

    it('lists no executions for a new trigger and validates the query', async () => {
      const res = await t.request.get(`/v1/triggers/${id}/executions`).set(bearer(reader));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, pages: 0 } });
      const range = await t.request.get(`/v1/triggers/${id}/executions?start_date=2030-01-02&end_date=2030-01-01`).set(bearer(reader));
      expect(range.status).toBe(400);
      expect(range.body.error).toMatchObject({ code: 'INVALID_DATE_RANGE', field: 'end_date' });
      const status = await t.request.get(`/v1/triggers/${id}/executions?status=done`).set(bearer(reader));
      expect(status.status).toBe(400);
      expect(status.body.error.field).toBe('status');
      const date = await t.request.get(`/v1/triggers/${id}/executions?start_date=yesterday`).set(bearer(reader));
      expect(date.status).toBe(400);
      expect(date.body.error.field).toBe('start_date');
      const limit = await t.request.get(`/v1/triggers/${id}/executions?limit=101`).set(bearer(reader));
      expect(limit.status).toBe(400);
      const detail = await t.request.get(`/v1/triggers/${id}/executions/trgexec_missing`).set(bearer(reader));
      expect(detail.status).toBe(404);
      expect(detail.body.error.code).toBe('TRIGGER_EXECUTION_NOT_FOUND');
    });

    it('answers empty metrics and checks granularity and range', async () => {
      const res = await t.request.get(`/v1/triggers/${id}/metrics?start_date=2030-01-01&end_date=2030-02-01&granularity=week`).set(bearer(reader));
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        trigger_id: id,
        // A date-only end_date covers its whole day: the period ends at the next midnight.
        period: { start_date: '2030-01-01T00:00:00.000Z', end_date: '2030-02-02T00:00:00.000Z' },
        metrics: {
          total_executions: 0,
          successful_executions: 0,
          failed_executions: 0,
          success_rate: 0,
          average_duration_ms: 0,
          unique_customers: 0,
          channel_breakdown: {},
        },
        // One bucket per week of the period (weeks start on Monday, UTC), zeros included.
        daily_metrics: ['2029-12-31', '2030-01-07', '2030-01-14', '2030-01-21', '2030-01-28'].map((date) => ({
          date,
          executions: 0,
          success_rate: 0,
          average_duration_ms: 0,
        })),
      });
      const gran = await t.request.get(`/v1/triggers/${id}/metrics?granularity=minute`).set(bearer(reader));
      expect(gran.status).toBe(422);
      expect(gran.body.error).toMatchObject({ code: 'INVALID_GRANULARITY', field: 'granularity' });
      const range = await t.request.get(`/v1/triggers/${id}/metrics?start_date=2030-01-02&end_date=2030-01-01`).set(bearer(reader));
      expect(range.status).toBe(400);
      expect(range.body.error).toMatchObject({ code: 'INVALID_DATE_RANGE', field: 'end_date' });
      const dflt = await t.request.get(`/v1/triggers/${id}/metrics`).set(bearer(reader));
      expect(dflt.status).toBe(200);
    });
  });

  it('documents every trigger route in the OpenAPI document', async () => {
    const doc = await t.request.get('/v1/openapi.json');
    const paths = Object.keys(doc.body.paths).filter((p) => p.startsWith('/v1/triggers'));
    expect(paths.sort()).toEqual(
      [
        '/v1/triggers',
        '/v1/triggers/{trigger_id}',
        '/v1/triggers/{trigger_id}/activate',
        '/v1/triggers/{trigger_id}/deactivate',
        '/v1/triggers/{trigger_id}/pause',
        '/v1/triggers/{trigger_id}/resume',
        '/v1/triggers/{trigger_id}/executions',
        '/v1/triggers/{trigger_id}/executions/{execution_id}',
        '/v1/triggers/{trigger_id}/metrics',
        '/v1/triggers/{trigger_id}/fire',
      ].sort(),
    );
  });
});
