/**
 * No route leaks across organizations: with real ids of one organization's resources, every
 * route answers another organization's admin key as if they did not exist, and changes
 * nothing.
 */
import { ROUTE_FACTORIES } from '../../../src/app';
import type { AnyRoute } from '../../../src/http/route';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

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
    const channel = await ok(post('/v1/channels', { type: 'http', name: 'Private channel', config: { url: 'http://127.0.0.1:9/send', channel: 'whatsapp' } }));
    ids.channel_id = (channel as { data: { id: string } }).data.id;
    // No worker: the recovery stays `running`, its counts unchanged.
    const recovery = await ok(post(`/v1/webhooks/${ids.webhook_id}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() }), 202);
    ids.recovery_id = (recovery as { data: { id: string } }).data.id;
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
    // Stays `running` too (no worker): a cancel by the stranger would change it.
    const replay = await ok(post('/v1/replays', { filter: { execution_ids: [ids.execution_id] } }));
    ids.replay_id = (replay as { data: { id: string } }).data.id;
    const dryRun = await ok(post(`/v1/workflows/${ids.workflow_id}/dry-runs`, { execution_ids: [ids.execution_id] }));
    ids.dry_run_id = (dryRun as { data: { id: string } }).data.id;
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'k1' };
    const app = await ok(post('/v1/applications', { name: 'Private app', scopes: ['workflows:read'], jwks: { keys: [jwk] } }));
    ids.application_id = (app as { data: { id: string } }).data.id;
    const user = await ok(post('/v1/users', { email: 'private@example.com', password: 'a long private password', role: 'read' }));
    ids.user_id = (user as { data: { id: string } }).data.id;
    const client = await ok(post('/v1/oauth-clients', { name: 'Private client', type: 'confidential', redirect_uris: ['https://a.example/cb'], scopes: ['workflows:read'] }));
    ids.client_id = (client as { data: { id: string } }).data.id;
    // No worker either: the export and the report stay pending, and belong to the owner.
    const exported = await ok(post('/v1/analytics/export', { data_type: 'executions' }));
    ids.export_id = (exported as { data: { export_id: string } }).data.export_id;
    const report = await ok(post('/v1/analytics/reports', { name: 'Private report', metrics: ['total_executions'] }));
    ids.report_id = (report as { data: { report_id: string } }).data.report_id;
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
          `/v1/channels/${ids.channel_id}`,
          `/v1/webhooks/${ids.webhook_id}/recoveries/${ids.recovery_id}`,
          `/v1/knowledge-bases/${ids.knowledge_base_id}`,
          `/v1/knowledge-bases/${ids.knowledge_base_id}/articles/${ids.article_id}`,
          `/v1/customers/${ids.customer_id}`,
          `/v1/customers/${ids.customer_id}/messages`,
          `/v1/api-keys/${ids.key_id}`,
          `/v1/applications/${ids.application_id}`,
          `/v1/users/${ids.user_id}`,
          `/v1/oauth-clients/${ids.client_id}`,
          `/v1/analytics/export/${ids.export_id}`,
          `/v1/analytics/reports/${ids.report_id}`,
          `/v1/replays/${ids.replay_id}`,
          `/v1/workflows/${ids.workflow_id}/dry-runs/${ids.dry_run_id}`,
        ].map(async (path) => {
          const res = await t.request.get(path).set(bearer(owner));
          expect({ path, status: res.status }).toEqual({ path, status: 200 });
          return res.body;
        }),
      ),
    );

  // Bodies each route would accept from the owner (read after beforeAll filled `ids`).
  const validBodies = (): Record<string, object> => ({
    'put /v1/workflows/{workflow_id}': { name: 'Taken over' },
    'post /v1/workflows/{workflow_id}/dry-runs': { execution_ids: [ids.execution_id] },
    'put /v1/webhooks/{webhook_id}': { name: 'Taken over' },
    'post /v1/webhooks/{webhook_id}/test': { event_type: 'workflow.completed' },
    'post /v1/webhooks/{webhook_id}/rotate-secret': {},
    'post /v1/webhooks/{webhook_id}/recover': { since: new Date(Date.now() - 3_600_000).toISOString() },
    'put /v1/triggers/{trigger_id}': { name: 'Taken over' },
    'post /v1/triggers/{trigger_id}/fire': { order: 1 },
    'put /v1/customers/{customer_id}': { name: 'Taken over' },
    'post /v1/customers/{customer_id}/messages': { text: 'Taken over' },
    'post /v1/customers/{customer_id}/handoff': { reason: 'Taken over' },
    'put /v1/knowledge-bases/{knowledge_base_id}': { name: 'Taken over' },
    'post /v1/knowledge-bases/{knowledge_base_id}/articles': { title: 'Taken over', content: 'Taken over' },
    'put /v1/knowledge-bases/{knowledge_base_id}/articles/{article_id}': { title: 'Taken over' },
    'put /v1/applications/{application_id}': { name: 'Taken over' },
    'put /v1/users/{user_id}': { role: 'read' },
    'put /v1/channels/{channel_id}': { name: 'Taken over', status: 'disabled' },
  });

  it("answers every route with another organization's ids as not found and changes nothing", async () => {
    const bodies = validBodies();
    const before = await snapshot();
    const routes: AnyRoute[] = ROUTE_FACTORIES.flatMap((f) => f(t.services)).filter((r) => /\{\w+\}/.test(r.path));
    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) {
      const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
        const id = ids[name];
        if (!id) throw new Error(`no fixture id for {${name}} in ${route.path}`);
        return id;
      });
      const what = `${route.method} ${route.path}`;
      const req = t.request[route.method](path).set(bearer(stranger));
      let res;
      if (route.body) {
        // A valid body, so that the only refusal left is the cross-organization one (an
        // invalid body would be refused with 400 before any lookup, hiding it).
        const body = bodies[what];
        if (!body) throw new Error(`no valid body for ${what}: add one to validBodies`);
        res = await req.send(body);
      } else {
        res = await req;
      }
      expect({ what, status: res.status, code: res.body.error?.code }).toEqual({ what, status: 404, code: expect.stringMatching(/NOT_FOUND$/) });
      expect(JSON.stringify(res.body)).not.toContain('Private');
    }
    expect(await snapshot()).toEqual(before);
  });

  it('never lists another organization\'s resources', async () => {
    for (const path of ['/v1/workflows', '/v1/triggers', '/v1/webhooks', '/v1/knowledge-bases', '/v1/customers', '/v1/api-keys', '/v1/applications', '/v1/users', '/v1/oauth-clients', '/v1/channels']) {
      const res = await t.request.get(path).set(bearer(stranger));
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(JSON.stringify(res.body.data)).not.toMatch(new RegExp(Object.values(ids).join('|')));
    }
  });
});
