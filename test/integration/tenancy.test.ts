/**
 * No route leaks across organizations: with real ids of one organization's resources, every
 * route answers another organization's admin key as if they did not exist, and changes
 * nothing.
 */
import { ROUTE_FACTORIES } from '../../src/app';
import type { AnyRoute } from '../../src/http/route';
import { bearer, createTestApp, type TestApp } from '../helpers/app';

describe('tenancy', () => {
  let t: TestApp;
  let owner: string;
  let stranger: string;
  const ids: Record<string, string> = {};

  const ok = async <T,>(res: Promise<{ status: number; body: T }>, expected = 201): Promise<T> => {
    const r = await res;
    if (r.status !== expected) throw new Error(`setup failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  beforeAll(async () => {
    t = await createTestApp();
    const own = await t.createKey('admin', await t.createOrg());
    owner = own.key;
    ids.key_id = own.id;
    stranger = (await t.createKey('admin', await t.createOrg())).key;
    const post = (path: string, body: object) => t.request.post(path).set(bearer(owner)).send(body);

    const wf = await ok(
      post('/v1/workflows', {
        name: 'Private',
        channel: 'whatsapp',
        configuration: { trigger: { type: 'keyword', keywords: ['secret'] }, nodes: [{ id: 'a', type: 'message', content: 'x' }] },
      }),
    );
    ids.workflow_id = (wf as { data: { id: string } }).data.id;
    await ok(t.request.post(`/v1/workflows/${ids.workflow_id}/activate`).set(bearer(owner)), 200);
    const trigger = await ok(
      post('/v1/triggers', { name: 'Private trigger', type: 'api', workflow_id: ids.workflow_id, configuration: { rate_limit: 10 } }),
    );
    ids.trigger_id = (trigger as { data: { id: string } }).data.id;
    const webhook = await ok(post('/v1/webhooks', { url: 'https://127.0.0.1:9/hooks', events: ['workflow.completed'] }));
    ids.webhook_id = (webhook as { data: { id: string } }).data.id;
    const kb = await ok(post('/v1/knowledge-bases', { name: 'Private KB' }));
    ids.knowledge_base_id = (kb as { data: { id: string } }).data.id;
    const article = await ok(post(`/v1/knowledge-bases/${ids.knowledge_base_id}/articles`, { title: 'Refunds', content: 'Within 30 days.' }));
    ids.article_id = (article as { data: { id: string } }).data.id;
    // No worker runs here: the execution stays `running`, which is all this test needs.
    const message = await ok(post('/v1/messages', { channel: 'whatsapp', customer_id: '+15550009', message: 'secret' }));
    const data = (message as { data: { customer_id: string; executions: Array<{ id: string }> } }).data;
    ids.customer_id = data.customer_id;
    ids.execution_id = data.executions[0]!.id;
    ids.log_id = 'whlog_unknown';
  });
  afterAll(() => t.close());

  const snapshot = async () =>
    JSON.stringify(
      await Promise.all(
        [
          `/v1/workflows/${ids.workflow_id}`,
          `/v1/workflows/${ids.workflow_id}/executions/${ids.execution_id}`,
          `/v1/triggers/${ids.trigger_id}`,
          `/v1/webhooks/${ids.webhook_id}`,
          `/v1/knowledge-bases/${ids.knowledge_base_id}`,
          `/v1/knowledge-bases/${ids.knowledge_base_id}/articles/${ids.article_id}`,
          `/v1/customers/${ids.customer_id}`,
          `/v1/api-keys/${ids.key_id}`,
        ].map(async (path) => {
          const res = await t.request.get(path).set(bearer(owner));
          expect({ path, status: res.status }).toEqual({ path, status: 200 });
          return res.body;
        }),
      ),
    );

  it("answers every route with another organization's ids as not found and changes nothing", async () => {
    const before = await snapshot();
    const routes: AnyRoute[] = ROUTE_FACTORIES.flatMap((f) => f(t.services)).filter((r) => /\{\w+\}/.test(r.path));
    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const id = ids[name];
        if (!id) throw new Error(`no fixture id for {${name}} in ${route.path}`);
        return id;
      });
      const req = t.request[route.method](path).set(bearer(stranger));
      const res = route.body ? await req.send({}) : await req;
      const what = `${route.method} ${route.path}`;
      // A body that fails validation is refused before any lookup, the same for every id.
      const expected = route.body && res.status === 400 ? 400 : 404;
      expect({ what, status: res.status }).toEqual({ what, status: expected });
      expect(JSON.stringify(res.body)).not.toContain('Private');
    }
    expect(await snapshot()).toEqual(before);
  });

  it('never lists another organization\'s resources', async () => {
    for (const path of ['/v1/workflows', '/v1/triggers', '/v1/webhooks', '/v1/knowledge-bases', '/v1/customers', '/v1/api-keys']) {
      const res = await t.request.get(path).set(bearer(stranger));
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(JSON.stringify(res.body.data)).not.toMatch(new RegExp(Object.values(ids).join('|')));
    }
  });
});
