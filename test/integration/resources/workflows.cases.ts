import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const messageConfig = {
  trigger: { type: 'keyword', keywords: ['hello'] },
  nodes: [
    { id: 'welcome', type: 'message', content: 'Hi! How can we help?', next: 'ask' },
    { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email' }] },
  ],
};

describe('workflows API', () => {
  let t: TestApp;
  let admin: string;
  let writer: string;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = (await t.createKey('admin')).key;
    writer = (await t.createKey('read_write')).key;
    reader = (await t.createKey('read')).key;
  });
  afterAll(() => t.close());

  const create = (body: object, key = writer) => t.request.post('/v1/workflows').set(bearer(key)).send(body);
  const countWorkflows = async () => (await t.query<{ n: number }>('select count(*)::int as n from workflows'))[0]?.n;

  it('creates a draft without configuration in the response, then gets it with configuration', async () => {
    const res = await create({ name: 'Support', description: 'Front desk', channel: 'whatsapp', configuration: messageConfig });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^wf_/),
      name: 'Support',
      description: 'Front desk',
      status: 'draft',
      channel: 'whatsapp',
      channel_connection_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      execution_count: 0,
      success_rate: null,
    });
    expect(res.body.data.configuration).toBeUndefined();

    const got = await t.request.get(`/v1/workflows/${res.body.data.id}`).set(bearer(reader));
    expect(got.status).toBe(200);
    expect(got.body.data.configuration.nodes[0]).toEqual(messageConfig.nodes[0]);
    expect(got.body.data.revision).toBe(1);
  });

  it('updates fields, refreshes updated_at and makes a configuration change a new revision', async () => {
    const { body } = await create({ name: 'Revisions', channel: 'voice', configuration: messageConfig });
    const id = body.data.id;
    await new Promise((r) => setTimeout(r, 5));
    const res = await t.request
      .put(`/v1/workflows/${id}`)
      .set(bearer(writer))
      .send({ description: 'changed', configuration: { nodes: [{ id: 'only', type: 'message', content: 'Bye' }] } });
    expect(res.status).toBe(200);
    expect(res.body.data.description).toBe('changed');
    expect(res.body.data.configuration).toBeUndefined();
    expect(Date.parse(res.body.data.updated_at)).toBeGreaterThan(Date.parse(body.data.updated_at));
    const got = await t.request.get(`/v1/workflows/${id}`).set(bearer(reader));
    expect(got.body.data.revision).toBe(2);
    const revisions = await t.query<{ revision: number }>('select revision from workflow_revisions where workflow_id = ? order by revision', [id]);
    expect(revisions.map((r) => r.revision)).toEqual([1, 2]);
  });

  it('lists with pagination and filters by status, channel and search', async () => {
    const org = await t.createOrg();
    const key = (await t.createKey('admin', org)).key;
    for (let i = 0; i < 5; i++) {
      await create({ name: `List ${i}`, description: i === 3 ? 'Refund desk' : '', channel: i % 2 ? 'instagram' : 'whatsapp' }, key);
    }
    const page = await t.request.get('/v1/workflows?page=2&limit=2').set(bearer(key));
    expect(page.status).toBe(200);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 5, pages: 3 });
    expect(page.body.data).toHaveLength(2);
    expect(page.body.data[0].configuration).toBeUndefined();

    const insta = await t.request.get('/v1/workflows?channel=instagram').set(bearer(key));
    expect(insta.body.data.map((w: { name: string }) => w.name).sort()).toEqual(['List 1', 'List 3']);
    const search = await t.request.get('/v1/workflows?search=REFUND').set(bearer(key));
    expect(search.body.data.map((w: { name: string }) => w.name)).toEqual(['List 3']);
    const drafts = await t.request.get('/v1/workflows?status=active').set(bearer(key));
    expect(drafts.body.pagination.total).toBe(0);
    const past = await t.request.get('/v1/workflows?page=9').set(bearer(key));
    expect(past.body).toEqual({ data: [], pagination: { page: 9, limit: 20, total: 5, pages: 1 } });
  });

  it('activates (validating configuration) and deactivates from any state, idempotently', async () => {
    const empty = await create({ name: 'No config', channel: 'whatsapp' });
    const refused = await t.request.post(`/v1/workflows/${empty.body.data.id}/activate`).set(bearer(writer));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'INVALID_WORKFLOW_CONFIG', field: 'configuration' });

    const wf = await create({ name: 'Activate me', channel: 'whatsapp', configuration: messageConfig });
    const id = wf.body.data.id;
    const on = await t.request.post(`/v1/workflows/${id}/activate`).set(bearer(writer));
    expect(on.status).toBe(200);
    expect(on.body.data).toEqual({ id, status: 'active', activated_at: expect.any(String) });
    const again = await t.request.post(`/v1/workflows/${id}/activate`).set(bearer(writer));
    expect(again.body.data.activated_at).toBe(on.body.data.activated_at);
    const off = await t.request.post(`/v1/workflows/${id}/deactivate`).set(bearer(writer));
    expect(off.body.data).toEqual({ id, status: 'inactive', deactivated_at: expect.any(String) });
    expect((await t.request.get(`/v1/workflows/${id}`).set(bearer(reader))).body.data.status).toBe('inactive');
  });

  it('deletes for admins only; the name becomes free and the workflow is gone', async () => {
    const wf = await create({ name: 'Delete me', channel: 'whatsapp' });
    const id = wf.body.data.id;
    const denied = await t.request.delete(`/v1/workflows/${id}`).set(bearer(writer));
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('INSUFFICIENT_PERMISSIONS');
    const res = await t.request.delete(`/v1/workflows/${id}`).set(bearer(admin));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: expect.any(String) });
    expect((await t.request.get(`/v1/workflows/${id}`).set(bearer(admin))).status).toBe(404);
    expect((await t.request.delete(`/v1/workflows/${id}`).set(bearer(admin))).body.error.code).toBe('WORKFLOW_NOT_FOUND');
    expect((await create({ name: 'Delete me', channel: 'whatsapp' })).status).toBe(201);
  });

  it('rejects a duplicate name in the organization but allows it in another', async () => {
    expect((await create({ name: 'Unique', channel: 'whatsapp' })).status).toBe(201);
    const dup = await create({ name: 'Unique', channel: 'voice' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'WORKFLOW_ALREADY_EXISTS', field: 'name' });
    const other = await t.createKey('read_write', await t.createOrg());
    expect((await create({ name: 'Unique', channel: 'whatsapp' }, other.key)).status).toBe(201);
  });

  it("answers 404 for another organization's workflow on every route, and changes nothing", async () => {
    const wf = await create({ name: 'Private', channel: 'whatsapp', configuration: messageConfig });
    const id = wf.body.data.id;
    const intruder = (await t.createKey('admin', await t.createOrg())).key;
    const calls = [
      t.request.get(`/v1/workflows/${id}`),
      t.request.put(`/v1/workflows/${id}`).send({ name: 'Stolen' }),
      t.request.post(`/v1/workflows/${id}/activate`),
      t.request.post(`/v1/workflows/${id}/deactivate`),
      t.request.delete(`/v1/workflows/${id}`),
    ];
    for (const call of calls) {
      const res = await call.set(bearer(intruder));
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('WORKFLOW_NOT_FOUND');
    }
    const list = await t.request.get('/v1/workflows').set(bearer(intruder));
    expect(list.body.data.find((w: { id: string }) => w.id === id)).toBeUndefined();
    const got = await t.request.get(`/v1/workflows/${id}`).set(bearer(admin));
    expect(got.body.data).toMatchObject({ name: 'Private', status: 'draft' });
  });

  describe('validation', () => {
    const cases: Array<[string, object, number, string, string]> = [
      ['missing name', { channel: 'whatsapp' }, 400, 'MISSING_REQUIRED_FIELD', 'name'],
      ['empty name', { name: '  ', channel: 'whatsapp' }, 400, 'INVALID_REQUEST', 'name'],
      ['name of wrong type', { name: 42, channel: 'whatsapp' }, 400, 'INVALID_REQUEST', 'name'],
      ['oversized name', { name: 'x'.repeat(201), channel: 'whatsapp' }, 400, 'INVALID_REQUEST', 'name'],
      ['oversized description', { name: 'n', description: 'x'.repeat(2001), channel: 'whatsapp' }, 400, 'INVALID_REQUEST', 'description'],
      ['description of wrong type', { name: 'n', description: ['x'], channel: 'whatsapp' }, 400, 'INVALID_REQUEST', 'description'],
      ['channel of wrong type', { name: 'n', channel: 3 }, 400, 'INVALID_REQUEST', 'channel'],
      ['missing channel', { name: 'n' }, 400, 'MISSING_REQUIRED_FIELD', 'channel'],
      [
        'oversized message content',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x'.repeat(4097) }] } },
        422,
        'INVALID_NODE_CONFIG',
        'configuration.nodes[0].content',
      ],
      [
        'unknown node field',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x', color: 'red' }] } },
        422,
        'INVALID_NODE_CONFIG',
        'configuration.nodes[0].color',
      ],
      [
        'unknown configuration field',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x' }], loops: true } },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.loops',
      ],
      [
        'form field without label',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'form', fields: [{ name: 'email', type: 'text' }] }] } },
        422,
        'INVALID_NODE_CONFIG',
        'configuration.nodes[0].fields[0].label',
      ],
      [
        'too many nodes',
        {
          name: 'n',
          channel: 'voice',
          configuration: { nodes: Array.from({ length: 101 }, (_, i) => ({ id: `n${i}`, type: 'message', content: 'x' })) },
        },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.nodes',
      ],
      ['unknown channel', { name: 'n', channel: 'fax' }, 400, 'INVALID_REQUEST', 'channel'],
      ['unknown field', { name: 'n', channel: 'voice', status: 'active' }, 400, 'INVALID_REQUEST', 'status'],
      ['configuration not an object', { name: 'n', channel: 'voice', configuration: 'x' }, 400, 'INVALID_WORKFLOW_CONFIG', 'configuration'],
      ['empty node list', { name: 'n', channel: 'voice', configuration: { nodes: [] } }, 400, 'INVALID_WORKFLOW_CONFIG', 'configuration.nodes'],
      [
        'message node without content',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message' }] } },
        422,
        'INVALID_NODE_CONFIG',
        'configuration.nodes[0].content',
      ],
      [
        'ai_response without knowledge_base',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x', next: 'b' }, { id: 'b', type: 'ai_response' }] } },
        422,
        'INVALID_NODE_CONFIG',
        'configuration.nodes[1].knowledge_base',
      ],
      [
        'form without fields',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'form', fields: [] }] } },
        422,
        'INVALID_NODE_CONFIG',
        'configuration.nodes[0].fields',
      ],
      [
        'unknown node type',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'teleport' }] } },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.nodes[0].type',
      ],
      [
        'next naming an unknown node',
        { name: 'n', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x', next: 'zz' }] } },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.nodes[0].next',
      ],
      [
        'duplicate node ids',
        {
          name: 'n',
          channel: 'voice',
          configuration: { nodes: [{ id: 'a', type: 'message', content: 'x' }, { id: 'a', type: 'message', content: 'y' }] },
        },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.nodes[1].id',
      ],
      [
        'a cycle',
        {
          name: 'n',
          channel: 'voice',
          configuration: { nodes: [{ id: 'a', type: 'message', content: 'x', next: 'b' }, { id: 'b', type: 'message', content: 'y', next: 'a' }] },
        },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.nodes[0].next',
      ],
      [
        'empty trigger keywords',
        { name: 'n', channel: 'voice', configuration: { trigger: { type: 'keyword', keywords: [] }, nodes: [{ id: 'a', type: 'message', content: 'x' }] } },
        400,
        'INVALID_WORKFLOW_CONFIG',
        'configuration.trigger.keywords',
      ],
    ];

    it.each(cases)('create with %s → %i %s', async (_label, body, status, code, field) => {
      const before = await countWorkflows();
      const res = await create(body);
      expect(res.status).toBe(status);
      expect(res.body.error).toMatchObject({ code, field, message: expect.any(String) });
      expect(await countWorkflows()).toBe(before);
    });

    it('rejects a bad update and leaves the workflow as it was', async () => {
      const wf = await create({ name: 'Stable', channel: 'voice', configuration: messageConfig });
      const id = wf.body.data.id;
      const bad = [
        [{ name: '' }, 'name'],
        [{ name: 5 }, 'name'],
        [{ channel: 'voice' }, 'channel'],
        [{ configuration: { nodes: [{ id: 'a', type: 'message' }] } }, 'configuration.nodes[0].content'],
        [{ description: 'x'.repeat(5000) }, 'description'],
      ] as const;
      for (const [body, field] of bad) {
        const res = await t.request.put(`/v1/workflows/${id}`).set(bearer(writer)).send(body);
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.body.error.field).toBe(field);
      }
      const got = await t.request.get(`/v1/workflows/${id}`).set(bearer(reader));
      expect(got.body.data).toMatchObject({ name: 'Stable', revision: 1, updated_at: wf.body.data.updated_at });
    });

    it.each([
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['limit=101', 'limit'],
      ['limit=0', 'limit'],
      ['status=archived', 'status'],
      ['channel=fax', 'channel'],
      ['search=' + 'x'.repeat(201), 'search'],
      ['sort=name', 'sort'],
    ])('rejects query %s naming the field', async (qs, field) => {
      const res = await t.request.get(`/v1/workflows?${qs}`).set(bearer(reader));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_REQUEST', field });
    });

    it('rejects malformed JSON, non-JSON bodies and bodies over 1 MiB', async () => {
      const malformed = await t.request.post('/v1/workflows').set(bearer(writer)).set('Content-Type', 'application/json').send('{"name":');
      expect(malformed.status).toBe(400);
      expect(malformed.body.error.code).toBe('INVALID_REQUEST');
      const text = await t.request.post('/v1/workflows').set(bearer(writer)).set('Content-Type', 'text/plain').send('name=x');
      expect(text.status).toBe(415);
      expect(text.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      const huge = await create({ name: 'big', channel: 'voice', description: 'x'.repeat(1024 * 1024 + 10) });
      expect(huge.status).toBe(413);
      expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    });
  });

  it('lets read keys read but not write', async () => {
    const res = await create({ name: 'By reader', channel: 'voice' }, reader);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('INSUFFICIENT_PERMISSIONS');
    expect((await t.request.get('/v1/workflows').set(bearer(reader))).status).toBe(200);
  });
});
