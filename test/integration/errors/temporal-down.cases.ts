/**
 * The API starts and serves while Temporal is unreachable: resources work, an inbound
 * message is recorded with its execution (started later by a worker's reconciler), and
 * /readyz says which dependency is missing.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { freePort } from '../../helpers/process';

describe('API with Temporal down', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` });
  });
  afterAll(() => t.close());

  it('serves requests, records executions for later and reports temporal unavailable', async () => {
    const ready = await t.request.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks).toEqual({ postgres: 'ok', redis: 'ok', temporal: 'unavailable' });

    const { key } = await t.createKey('admin');
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Offline', channel: 'voice', configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'a', type: 'message', content: 'x' }] } });
    expect(wf.status).toBe(201);
    await t.request.post(`/v1/workflows/${wf.body.data.id}/activate`).set(bearer(key)).expect(200);

    const sent = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'voice', customer_id: 'caller-1', message: 'hi' });
    expect(sent.status).toBe(201);
    const executionId: string = sent.body.data.executions[0].id;
    const rows = await t.query<{ status: string; temporal_started_at: string | null }>(
      'select status, temporal_started_at from executions where id = ?',
      [executionId],
    );
    expect(rows).toEqual([{ status: 'running', temporal_started_at: null }]);

    // A dry run is recorded too and waits for the reconciler (as exports, reports and replays do).
    const dryRun = await t.request.post(`/v1/workflows/${wf.body.data.id}/dry-runs`).set(bearer(key)).send({ execution_ids: [executionId] });
    expect([dryRun.status, dryRun.body.data.status]).toEqual([201, 'pending']);
    expect(await t.query('select status, temporal_started_at from dry_runs')).toEqual([{ status: 'pending', temporal_started_at: null }]);

    // So is a webhook recovery: 202, running, its start left to the reconciler.
    const hook = await t.request.post('/v1/webhooks').set(bearer(key)).send({ url: 'https://127.0.0.1:9/hooks', events: ['workflow.completed'] });
    expect(hook.status).toBe(201);
    const recovery = await t.request.post(`/v1/webhooks/${hook.body.data.id}/recover`).set(bearer(key)).send({ since: new Date(Date.now() - 60_000).toISOString() });
    expect([recovery.status, recovery.body.data.status]).toEqual([202, 'running']);
    expect(await t.query('select status, temporal_started_at from webhook_recoveries')).toEqual([{ status: 'running', temporal_started_at: null }]);
  });
});
