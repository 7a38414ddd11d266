/**
 * Every route, fed malformed input, answers a 4xx in the error envelope and never a 5xx:
 * unknown or foreign ids, wrong JSON types, unknown fields, junk query values, and NUL
 * characters (which PostgreSQL cannot store) in every place a string can arrive.
 */
import { ROUTE_FACTORIES } from '../../../src/app';
import type { AnyRoute } from '../../../src/http/route';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const JUNK_BODIES: unknown[] = [{}, [], 'text', 42, null, { unexpected: true }, { name: { nested: [1, 2] }, configuration: 'x', events: 7 }];
const JUNK_IDS = ['does_not_exist', 'x'.repeat(65), '%00', '..', 'wf_' + 'A'.repeat(20)];
const JUNK_QUERIES = ['page=-1', 'limit=abc', 'status=%00', 'start_date=yesterday', 'end_date=2020-13-45', 'granularity=year', 'unknown=1'];

// Bodies that would pass validation on some route but for a NUL character; [body, field].
const NUL_BODIES: Array<[unknown, string]> = [
  [{ name: 'a\u0000b', channel: 'whatsapp' }, 'name'],
  [{ name: 'ok', description: '\u0000', channel: 'whatsapp' }, 'description'],
  [{ channel: 'whatsapp', customer_id: 'c\u0000', message: 'hi' }, 'customer_id'],
  [{ channel: 'whatsapp', customer_id: 'c', message: 'hi\u0000' }, 'message'],
  [{ channel: 'whatsapp', customer_id: 'c', message: 'hi', metadata: { 'k\u0000': 'v' } }, 'metadata'],
  [{ channel: 'whatsapp', customer_id: 'c', message: 'hi', metadata: { k: ['v', { w: 'x\u0000' }] } }, 'metadata.k[1].w'],
];
const NUL_QUERY_NAMES = ['search', 'workflow_id', 'status', 'trigger_id', 'channel', 'event_id', 'start_date', 'page'];

describe('no 5xx for client input', () => {
  let t: TestApp;
  let key: string;
  let routes: AnyRoute[];

  beforeAll(async () => {
    // Refused input is counted like any authenticated request; these hundreds of requests are not about limits.
    const unlimited = Object.fromEntries(
      ['CREDENTIAL', 'RESOURCE_READ', 'RESOURCE_WRITE', 'RESOURCE_DELETE', 'EXECUTION_OPS', 'ANALYTICS_REALTIME', 'ANALYTICS_HISTORICAL', 'ANALYTICS_REPORTS', 'ANALYTICS_EXPORT'].map(
        (name) => [`RATE_LIMIT_${name}_PER_HOUR`, '1000000'],
      ),
    );
    t = await createTestApp(unlimited);
    key = (await t.createKey('admin')).key;
    routes = ROUTE_FACTORIES.flatMap((f) => f(t.services));
  });
  afterAll(() => t.close());

  const pathWith = (route: AnyRoute, id: string) => route.path.replace(/\{\w+\}/g, encodeURIComponent(id));

  const expectClientError = (res: { status: number; body: { error?: { code?: string } } }, what: string) => {
    // A 4xx, never a 2xx (the junk was taken) nor a 5xx, always in the error envelope.
    const status = res.status >= 400 && res.status < 500 ? '4xx' : res.status;
    expect({ what, status, code: typeof res.body.error?.code }).toEqual({ what, status: '4xx', code: 'string' });
  };

  it('answers junk ids with a 4xx on every route', async () => {
    for (const route of routes.filter((r) => /\{\w+\}/.test(r.path))) {
      for (const id of JUNK_IDS) {
        const req = t.request[route.method](pathWith(route, id)).set(bearer(key));
        const res = route.method === 'get' || route.method === 'delete' ? await req : await req.send({});
        expectClientError(res, `${route.method} ${route.path} id=${id}`);
      }
    }
  });

  it('answers junk bodies with a 4xx on every route that takes one', async () => {
    for (const route of routes.filter((r) => r.method !== 'get' && r.method !== 'delete')) {
      for (const body of JUNK_BODIES) {
        const res = await t.request[route.method](pathWith(route, 'does_not_exist'))
          .set(bearer(key))
          .set('Content-Type', 'application/json')
          .send(JSON.stringify(body));
        expectClientError(res, `${route.method} ${route.path} body=${JSON.stringify(body)}`);
      }
    }
  });

  it('answers junk query values with a 4xx on every list and metrics route', async () => {
    for (const route of routes.filter((r) => r.method === 'get' && r.query)) {
      for (const qs of JUNK_QUERIES) {
        const res = await t.request.get(`${pathWith(route, 'does_not_exist')}?${qs}`).set(bearer(key));
        expectClientError(res, `GET ${route.path}?${qs}`);
      }
    }
  });

  const expectNulRefused = (res: { status: number; body: { error?: { code?: string; field?: string; message?: string } } }, what: string, field: string) =>
    expect({ what, status: res.status, code: res.body.error?.code, field: res.body.error?.field, nul: /NUL/.test(res.body.error?.message ?? '') }).toEqual({
      what,
      status: 400,
      code: 'INVALID_REQUEST',
      field,
      nul: true,
    });

  it('refuses a NUL character in a path id on every route with 400 and field "path"', async () => {
    for (const route of routes.filter((r) => /\{\w+\}/.test(r.path))) {
      for (const id of ['\u0000', 'wf_\u0000', 'trg_' + 'A'.repeat(10) + '\u0000']) {
        const req = t.request[route.method](pathWith(route, id)).set(bearer(key));
        const res = route.method === 'get' || route.method === 'delete' ? await req : await req.send({});
        expectNulRefused(res, `${route.method} ${route.path} id=${JSON.stringify(id)}`, 'path');
      }
    }
  });

  it('refuses a NUL character in any query parameter on every route with 400 and the parameter as field', async () => {
    for (const route of routes) {
      for (const name of route.method === 'get' ? NUL_QUERY_NAMES : ['search']) {
        const req = t.request[route.method](`${pathWith(route, 'does_not_exist')}?${name}=a%00b`).set(bearer(key));
        const res = route.method === 'get' || route.method === 'delete' ? await req : await req.send({});
        expectNulRefused(res, `${route.method} ${route.path}?${name}=a%00b`, name);
      }
    }
  });

  it('refuses a NUL character in any body key or value on every route that takes a body, naming the field', async () => {
    const before = await t.query<{ n: number }>('select (select count(*) from workflows) + (select count(*) from messages) + (select count(*) from customers) as n');
    for (const route of routes.filter((r) => r.method !== 'get' && r.method !== 'delete')) {
      for (const [body, field] of NUL_BODIES) {
        const res = await t.request[route.method](pathWith(route, 'does_not_exist'))
          .set(bearer(key))
          .set('Content-Type', 'application/json')
          .send(JSON.stringify(body));
        expectNulRefused(res, `${route.method} ${route.path} body=${JSON.stringify(body)}`, field);
      }
    }
    const after = await t.query<{ n: number }>('select (select count(*) from workflows) + (select count(*) from messages) + (select count(*) from customers) as n');
    expect(after).toEqual(before);
  });

  it('refuses a NUL character on the webhook-trigger receiver (outside /v1, no API key) too', async () => {
    expectNulRefused(await t.request.post(`/hooks/triggers/${encodeURIComponent('trg_\u0000')}`).send({}), 'receiver path', 'path');
    expectNulRefused(await t.request.get('/hooks/triggers/trg_unknown?order=%00'), 'receiver query', 'order');
    for (const [body, field] of NUL_BODIES) {
      const res = await t.request.post('/hooks/triggers/trg_unknown').set('Content-Type', 'application/json').send(JSON.stringify(body));
      expectNulRefused(res, `receiver body=${JSON.stringify(body)}`, field);
    }
  });
});
