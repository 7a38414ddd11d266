/**
 * The webhooks endpoints' contract: field visibility (secret on create/get/update, never
 * in lists; retry_policy on get/update only), validation codes, uniqueness, tenancy and
 * scopes. Delivery itself is proven in test/temporal/webhooks/delivery.cases.ts.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

let t: TestApp;
let auth: Record<string, string>;
let orgId: string;
let n = 0;
const url = (p = `/h${++n}`) => `https://localhost:9443${p}`;

beforeAll(async () => {
  t = await createTestApp();
  orgId = await t.createOrg();
  auth = bearer((await t.createKey('admin', orgId)).key);
});
afterAll(async () => {
  await t?.close();
});

const create = (body: Record<string, unknown>, a = auth) => t.request.post('/v1/webhooks').set(a).send(body);

test('create answers 201 with a generated secret and without retry_policy; get shows both with defaults', async () => {
  const res = await create({ name: 'CRM', url: url(), events: ['workflow.completed', 'workflow.failed', 'workflow.completed'], active: true });
  expect(res.status).toBe(201);
  const d = res.body.data;
  expect(d).toMatchObject({ name: 'CRM', events: ['workflow.completed', 'workflow.failed'], active: true });
  expect(d.id).toMatch(/^wh_/);
  expect(d).not.toHaveProperty('retry_policy');
  expect(Buffer.from(d.secret, 'base64url').length).toBeGreaterThanOrEqual(24);
  expect(Date.parse(d.created_at)).not.toBeNaN();
  const got = await t.request.get(`/v1/webhooks/${d.id}`).set(auth);
  expect(got.status).toBe(200);
  expect(got.body.data).toMatchObject({ id: d.id, secret: d.secret, retry_policy: { max_retries: 3, retry_delay_ms: 1000 } });
});

test('a given secret and retry_policy are kept', async () => {
  const res = await create({ url: url(), events: ['message.sent'], secret: 'my-own-secret-0123456789', retry_policy: { max_retries: 10, retry_delay_ms: 30000 } });
  expect(res.status).toBe(201);
  expect(res.body.data.secret).toBe('my-own-secret-0123456789');
  expect(res.body.data.name).toBe('localhost');
  const got = await t.request.get(`/v1/webhooks/${res.body.data.id}`).set(auth);
  expect(got.body.data.retry_policy).toEqual({ max_retries: 10, retry_delay_ms: 30000 });
});

test('list items carry neither secret nor retry_policy; active and event_type filter; pagination', async () => {
  const org = await t.createOrg();
  const a = bearer((await t.createKey('admin', org)).key);
  await create({ url: url(), events: ['customer.created'] }, a);
  await create({ url: url(), events: ['customer.updated'], active: false }, a);
  await create({ url: url(), events: ['customer.created', 'customer.updated'] }, a);
  const all = await t.request.get('/v1/webhooks?limit=2').set(a);
  expect(all.status).toBe(200);
  expect(all.body.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2 });
  for (const item of all.body.data) {
    expect(item).not.toHaveProperty('secret');
    expect(item).not.toHaveProperty('retry_policy');
  }
  expect((await t.request.get('/v1/webhooks?active=false').set(a)).body.pagination.total).toBe(1);
  expect((await t.request.get('/v1/webhooks?event_type=customer.created').set(a)).body.pagination.total).toBe(2);
  expect((await t.request.get('/v1/webhooks?event_type=customer.updated&active=true').set(a)).body.pagination.total).toBe(1);
  const bad = await t.request.get('/v1/webhooks?event_type=customer.deleted').set(a);
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('INVALID_EVENT_TYPES');
});

test('update changes name, events and retry_policy and answers with secret and retry_policy', async () => {
  const { id, secret } = (await create({ url: url(), events: ['message.sent'] })).body.data;
  const res = await t.request.put(`/v1/webhooks/${id}`).set(auth).send({ name: 'Renamed', events: ['message.received'], retry_policy: { max_retries: 0, retry_delay_ms: 100 } });
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ id, name: 'Renamed', events: ['message.received'], secret, retry_policy: { max_retries: 0, retry_delay_ms: 100 } });
  const bad = await t.request.put(`/v1/webhooks/${id}`).set(auth).send({ url: url() });
  expect(bad.status).toBe(400);
  expect(bad.body.error).toMatchObject({ code: 'INVALID_REQUEST', field: 'url' });
});

test.each([
  [{ url: 'http://localhost:9443/x', events: ['workflow.started'] }, 400, 'INVALID_WEBHOOK_URL', 'url'],
  [{ url: 'not a url', events: ['workflow.started'] }, 400, 'INVALID_WEBHOOK_URL', 'url'],
  [{ url: 42, events: ['workflow.started'] }, 400, 'INVALID_WEBHOOK_URL', 'url'],
  [{ events: ['workflow.started'] }, 400, 'INVALID_WEBHOOK_URL', 'url'],
  [{ url: 'https://user:pw@localhost/x', events: ['workflow.started'] }, 400, 'INVALID_WEBHOOK_URL', 'url'],
  [{ url: 'https://localhost/e', events: [] }, 400, 'INVALID_EVENT_TYPES', 'events'],
  [{ url: 'https://localhost/e' }, 400, 'INVALID_EVENT_TYPES', 'events'],
  [{ url: 'https://localhost/e', events: ['workflow.exploded'] }, 400, 'INVALID_EVENT_TYPES', 'events[0]'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], retry_policy: { max_retries: 11 } }, 400, 'INVALID_RETRY_POLICY', 'retry_policy.max_retries'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], retry_policy: { retry_delay_ms: 99 } }, 400, 'INVALID_RETRY_POLICY', 'retry_policy.retry_delay_ms'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], retry_policy: { retry_delay_ms: 30001 } }, 400, 'INVALID_RETRY_POLICY', 'retry_policy.retry_delay_ms'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], retry_policy: { max_retries: 1.5 } }, 400, 'INVALID_RETRY_POLICY', 'retry_policy.max_retries'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], retry_policy: 'often' }, 400, 'INVALID_RETRY_POLICY', 'retry_policy'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], secret: 'short' }, 400, 'INVALID_REQUEST', 'secret'],
  [{ url: 'https://localhost/e', events: ['workflow.started'], colour: 'red' }, 400, 'INVALID_REQUEST', 'colour'],
])('create %j → %i %s', async (body, status, code, field) => {
  const res = await create(body as Record<string, unknown>);
  expect(res.status).toBe(status);
  expect(res.body.error).toMatchObject({ code, field });
  expect(typeof res.body.error.message).toBe('string');
});

test('the same URL twice in one organization is 409 WEBHOOK_ALREADY_EXISTS; another organization may use it', async () => {
  const u = url();
  expect((await create({ url: u, events: ['workflow.started'] })).status).toBe(201);
  const dup = await create({ url: u, events: ['workflow.failed'] });
  expect(dup.status).toBe(409);
  expect(dup.body.error).toMatchObject({ code: 'WEBHOOK_ALREADY_EXISTS', field: 'url' });
  const other = bearer((await t.createKey('admin', await t.createOrg())).key);
  expect((await create({ url: u, events: ['workflow.started'] }, other)).status).toBe(201);
});

test("another organization's webhook, and a missing one, are 404 WEBHOOK_NOT_FOUND everywhere", async () => {
  const { id } = (await create({ url: url(), events: ['workflow.started'] })).body.data;
  const other = bearer((await t.createKey('admin', await t.createOrg())).key);
  const calls = [
    t.request.get(`/v1/webhooks/${id}`).set(other),
    t.request.put(`/v1/webhooks/${id}`).set(other).send({ name: 'x' }),
    t.request.delete(`/v1/webhooks/${id}`).set(other),
    t.request.post(`/v1/webhooks/${id}/test`).set(other).send({ event_type: 'workflow.started' }),
    t.request.get(`/v1/webhooks/${id}/logs`).set(other),
    t.request.get('/v1/webhooks/wh_missing').set(auth),
  ];
  for (const res of await Promise.all(calls)) {
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('WEBHOOK_NOT_FOUND');
  }
});

test('delete answers a message; the webhook is gone afterwards', async () => {
  const { id } = (await create({ url: url(), events: ['workflow.started'] })).body.data;
  const res = await t.request.delete(`/v1/webhooks/${id}`).set(auth);
  expect(res.status).toBe(200);
  expect(res.body.message).toEqual(expect.any(String));
  expect((await t.request.get(`/v1/webhooks/${id}`).set(auth)).status).toBe(404);
});

test('scopes: read keys only read, read_write keys cannot delete', async () => {
  const read = bearer((await t.createKey('read', orgId)).key);
  const rw = bearer((await t.createKey('read_write', orgId)).key);
  expect((await t.request.get('/v1/webhooks').set(read)).status).toBe(200);
  expect((await create({ url: url(), events: ['workflow.started'] }, read)).status).toBe(403);
  const { id } = (await create({ url: url(), events: ['workflow.started'] }, rw)).body.data;
  const del = await t.request.delete(`/v1/webhooks/${id}`).set(rw);
  expect(del.status).toBe(403);
});

test('log query validation: status values and date range', async () => {
  const { id } = (await create({ url: url(), events: ['workflow.started'] })).body.data;
  const empty = await t.request.get(`/v1/webhooks/${id}/logs?status=success&start_date=2026-01-01T00:00:00Z&end_date=2026-02-01T00:00:00Z`).set(auth);
  expect(empty.status).toBe(200);
  expect(empty.body).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, pages: 0 } });
  const badStatus = await t.request.get(`/v1/webhooks/${id}/logs?status=exploded`).set(auth);
  expect(badStatus.status).toBe(400);
  expect(badStatus.body.error.field).toBe('status');
  const badRange = await t.request.get(`/v1/webhooks/${id}/logs?start_date=2026-02-01&end_date=2026-01-01`).set(auth);
  expect(badRange.status).toBe(400);
  expect(badRange.body.error).toMatchObject({ code: 'INVALID_DATE_RANGE', field: 'end_date' });
});

test('log dates follow the service-wide period rule: start inclusive, a timestamp end exclusive, a date-only end includes that day', async () => {
  const { id } = (await create({ url: url(), events: ['workflow.started'] })).body.data;
  const at = ['2026-03-01T00:00:00Z', '2026-03-01T12:00:00Z', '2026-03-02T00:00:00Z', '2026-03-02T23:59:59.999Z', '2026-03-03T00:00:00Z'];
  for (const [i, deliveredAt] of at.entries()) {
    await t.query(
      `insert into webhook_logs (id, webhook_id, organization_id, event_id, event_type, status, response_code, response_time_ms, attempt, delivered_at)
       values (?, ?, ?, ?, 'workflow.started', 'success', 200, 5, 1, ?)`,
      [`whl_dates_${i}`, id, orgId, `evt_dates_${i}`, deliveredAt],
    );
  }
  const deliveredIn = async (query: string) => {
    const res = await t.request.get(`/v1/webhooks/${id}/logs?${query}`).set(auth);
    expect(res.status).toBe(200);
    return (res.body.data as Array<{ delivered_at: string }>).map((l) => l.delivered_at).sort();
  };
  // A timestamp end is exclusive: the log delivered exactly at end_date is left out, the one at start_date kept.
  expect(await deliveredIn('start_date=2026-03-01T12:00:00Z&end_date=2026-03-02T00:00:00Z')).toEqual(['2026-03-01T12:00:00.000Z']);
  // A date-only end includes that whole UTC day, and nothing of the next.
  expect(await deliveredIn('start_date=2026-03-02&end_date=2026-03-02')).toEqual(['2026-03-02T00:00:00.000Z', '2026-03-02T23:59:59.999Z']);
  expect(await deliveredIn('start_date=2026-03-01&end_date=2026-03-02')).toEqual(at.slice(0, 4).map((d) => new Date(d).toISOString()));
});

test('the OpenAPI document describes every webhook operation', async () => {
  const doc = (await t.request.get('/v1/openapi.json')).body;
  expect(Object.keys(doc.paths)).toEqual(
    expect.arrayContaining(['/v1/webhooks', '/v1/webhooks/{webhook_id}', '/v1/webhooks/{webhook_id}/test', '/v1/webhooks/{webhook_id}/logs', '/v1/webhooks/{webhook_id}/logs/{log_id}/redeliver']),
  );
  expect(doc.components.schemas).toHaveProperty('WebhookEvent');
});
