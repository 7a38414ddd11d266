/**
 * Customer list filters and the knowledge bases' and articles' update and delete, which
 * only the OpenAPI sweep reached before (by status code): what the client sees after each.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('customers and knowledge bases', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  afterAll(() => t.close());

  const get = (path: string, k = key) => t.request.get(path).set(bearer(k));

  describe('GET /v1/customers', () => {
    const customers: Record<string, string> = {};

    beforeAll(async () => {
      // Inbound messages create the customers (no workflow matches: nothing runs).
      for (const [channel, externalId] of [
        ['whatsapp', '+15550001'],
        ['whatsapp', '+15550002'],
        ['instagram', '+15550001'],
        ['voice', 'caller-9'],
      ] as const) {
        const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel, customer_id: externalId, message: 'hello' });
        expect(res.status).toBe(201);
        customers[`${channel}:${externalId}`] = res.body.data.customer_id;
      }
      // Another organization's customer with the same external id never shows.
      const other = (await t.createKey('admin', await t.createOrg())).key;
      expect((await t.request.post('/v1/messages').set(bearer(other)).send({ channel: 'whatsapp', customer_id: '+15550001', message: 'hello' })).status).toBe(201);
    });

    const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((c) => c.id);

    it('lists the organization’s customers newest first, filtered by channel and by external id', async () => {
      const all = await get('/v1/customers');
      expect(all.status).toBe(200);
      expect(ids(all)).toEqual([customers['voice:caller-9'], customers['instagram:+15550001'], customers['whatsapp:+15550002'], customers['whatsapp:+15550001']]);
      expect(all.body.pagination).toMatchObject({ total: 4 });

      const whatsapp = await get('/v1/customers?channel=whatsapp');
      expect(ids(whatsapp)).toEqual([customers['whatsapp:+15550002'], customers['whatsapp:+15550001']]);
      expect(whatsapp.body.data.every((c: { channel: string }) => c.channel === 'whatsapp')).toBe(true);

      // One external id on two channels is two customers.
      const byExternal = await get(`/v1/customers?external_id=${encodeURIComponent('+15550001')}`);
      expect(ids(byExternal).sort()).toEqual([customers['instagram:+15550001'], customers['whatsapp:+15550001']].sort());
      const both = await get(`/v1/customers?channel=instagram&external_id=${encodeURIComponent('+15550001')}`);
      expect(both.body.data).toEqual([expect.objectContaining({ id: customers['instagram:+15550001'], channel: 'instagram', external_id: '+15550001', message_count: 1 })]);
      expect((await get('/v1/customers?external_id=nobody')).body).toMatchObject({ data: [], pagination: { total: 0 } });

      const page2 = await get('/v1/customers?limit=3&page=2');
      expect(ids(page2)).toEqual([customers['whatsapp:+15550001']]);
      expect(page2.body.pagination).toMatchObject({ page: 2, limit: 3, total: 4 });
    });

    it('refuses an unknown channel or filter with 400 naming the field', async () => {
      const channel = await get('/v1/customers?channel=fax');
      expect(channel.status).toBe(400);
      expect(channel.body.error.field).toBe('channel');
      const unknown = await get('/v1/customers?name=Ada');
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      expect((await get('/v1/customers?external_id=')).status).toBe(400);
    });
  });

  describe('knowledge bases', () => {
    it('updates a knowledge base’s name and description, and refuses a name another one has', async () => {
      const a = (await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Billing', description: 'old' })).body.data;
      await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Shipping' });

      const put = await t.request.put(`/v1/knowledge-bases/${a.id}`).set(bearer(key)).send({ description: 'Invoices and refunds' });
      expect(put.status).toBe(200);
      expect(put.body.data).toMatchObject({ id: a.id, name: 'Billing', description: 'Invoices and refunds', article_count: 0, created_at: a.created_at });
      expect(Date.parse(put.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(a.updated_at));
      const renamed = await t.request.put(`/v1/knowledge-bases/${a.id}`).set(bearer(key)).send({ name: 'Payments' });
      expect(renamed.body.data).toMatchObject({ name: 'Payments', description: 'Invoices and refunds' });
      expect((await get(`/v1/knowledge-bases/${a.id}`)).body.data).toMatchObject({ name: 'Payments', description: 'Invoices and refunds' });

      const taken = await t.request.put(`/v1/knowledge-bases/${a.id}`).set(bearer(key)).send({ name: 'Shipping' });
      expect(taken.status).toBe(409);
      expect(taken.body.error).toMatchObject({ code: 'KNOWLEDGE_BASE_ALREADY_EXISTS', field: 'name' });
      expect((await get(`/v1/knowledge-bases/${a.id}`)).body.data.name).toBe('Payments');
      const unknown = await t.request.put(`/v1/knowledge-bases/${a.id}`).set(bearer(key)).send({ owner: 'me' });
      expect(unknown.status).toBe(400);
    });

    it('deletes a knowledge base with its articles; its name is free again', async () => {
      const kb = (await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Returns' })).body.data;
      const article = (await t.request.post(`/v1/knowledge-bases/${kb.id}/articles`).set(bearer(key)).send({ title: 'Window', content: '30 days' })).body.data;
      const del = await t.request.delete(`/v1/knowledge-bases/${kb.id}`).set(bearer(key));
      expect(del.status).toBe(200);
      expect(del.body.message).toEqual(expect.stringContaining(kb.id));
      expect((await get(`/v1/knowledge-bases/${kb.id}`)).status).toBe(404);
      expect((await get(`/v1/knowledge-bases/${kb.id}/articles/${article.id}`)).status).toBe(404);
      expect((await get('/v1/knowledge-bases?limit=100')).body.data.map((k: { id: string }) => k.id)).not.toContain(kb.id);
      expect(await t.query('select id from knowledge_base_articles where knowledge_base_id = ?', [kb.id])).toEqual([]);
      expect((await t.request.delete(`/v1/knowledge-bases/${kb.id}`).set(bearer(key))).status).toBe(404);
      expect((await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Returns' })).status).toBe(201);
    });

    it('updates an article (what retrieval searches follows) and deletes it', async () => {
      const kb = (await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Accounts' })).body.data;
      const base = `/v1/knowledge-bases/${kb.id}/articles`;
      const article = (await t.request.post(base).set(bearer(key)).send({ title: 'Passwords', content: 'Reset your password in Settings.' })).body.data;
      const keep = (await t.request.post(base).set(bearer(key)).send({ title: 'Email', content: 'Change your email in Profile.' })).body.data;

      const put = await t.request.put(`${base}/${article.id}`).set(bearer(key)).send({ content: 'Refunds take five days.' });
      expect(put.status).toBe(200);
      expect(put.body.data).toMatchObject({ id: article.id, knowledge_base_id: kb.id, title: 'Passwords', content: 'Refunds take five days.' });
      expect((await get(`${base}/${article.id}`)).body.data).toMatchObject({ title: 'Passwords', content: 'Refunds take five days.' });
      const matches = (word: string) =>
        t.query<{ id: string }>("select id from knowledge_base_articles where knowledge_base_id = ? and search_vector @@ to_tsquery('english', ?) order by id", [kb.id, word]);
      expect(await matches('refund')).toEqual([{ id: article.id }]);
      expect(await matches('reset')).toEqual([]);
      const retitled = await t.request.put(`${base}/${article.id}`).set(bearer(key)).send({ title: 'Refunds' });
      expect(retitled.body.data).toMatchObject({ title: 'Refunds', content: 'Refunds take five days.' });
      const empty = await t.request.put(`${base}/${article.id}`).set(bearer(key)).send({ content: '  ' });
      expect(empty.status).toBe(400);
      expect(empty.body.error.field).toBe('content');

      const del = await t.request.delete(`${base}/${article.id}`).set(bearer(key));
      expect(del.status).toBe(200);
      expect((await get(`${base}/${article.id}`)).status).toBe(404);
      expect((await get(base)).body.data.map((a: { id: string }) => a.id)).toEqual([keep.id]);
      expect((await get(`/v1/knowledge-bases/${kb.id}`)).body.data.article_count).toBe(1);
      expect((await t.request.delete(`${base}/${article.id}`).set(bearer(key))).status).toBe(404);
    });
  });
});
