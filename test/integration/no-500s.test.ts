/**
 * Every route, fed malformed input, answers a 4xx in the error envelope and never a 5xx:
 * unknown or foreign ids, wrong JSON types, unknown fields, junk query values.
 */
import { ROUTE_FACTORIES } from '../../src/app';
import type { AnyRoute } from '../../src/http/route';
import { bearer, createTestApp, type TestApp } from '../helpers/app';

const JUNK_BODIES: unknown[] = [{}, [], 'text', 42, null, { unexpected: true }, { name: { nested: [1, 2] }, configuration: 'x', events: 7 }];
const JUNK_IDS = ['does_not_exist', 'x'.repeat(65), '%00', '..', 'wf_' + 'A'.repeat(20)];
const JUNK_QUERIES = ['page=-1', 'limit=abc', 'status=%00', 'start_date=yesterday', 'end_date=2020-13-45', 'granularity=year', 'unknown=1'];

describe('no 5xx for client input', () => {
  let t: TestApp;
  let key: string;
  let routes: AnyRoute[];

  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
    routes = ROUTE_FACTORIES.flatMap((f) => f(t.services));
  });
  afterAll(() => t.close());

  const pathWith = (route: AnyRoute, id: string) => route.path.replace(/\{\w+\}/g, encodeURIComponent(id));

  const expectClientError = (res: { status: number; body: { error?: { code?: string } } }, what: string) => {
    expect({ what, status: res.status < 500 ? 'not 5xx' : res.status }).toEqual({ what, status: 'not 5xx' });
    if (res.status >= 400) expect({ what, code: typeof res.body.error?.code }).toEqual({ what, code: 'string' });
  };

  it('answers junk ids with a 4xx on every route', async () => {
    for (const route of routes.filter((r) => /\{\w+\}/.test(r.path))) {
      for (const id of JUNK_IDS) {
        const req = t.request[route.method](pathWith(route, id)).set(bearer(key));
        const res = route.method === 'get' || route.method === 'delete' ? await req : await req.send({});
        expectClientError(res, `${route.method} ${route.path} id=${id}`);
        expect(res.status).toBeGreaterThanOrEqual(400);
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
});
