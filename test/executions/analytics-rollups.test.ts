/**
 * Real executions on Temporal feed the analytics rollups: counts, messages, form ratings
 * and NPS agree with what ran and with GET /v1/workflows/{id}/metrics. A worker SIGKILLed
 * right after committing an execution's finish (before Temporal recorded it, so the finish
 * runs again on the next worker) does not count it twice.
 */
import { Client } from 'pg';
import { rollupFunctionNames, rollupFunctionsSql } from '../../src/db/rollup-functions';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type SpawnedProcess, spawnService } from '../helpers/process';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from './helpers';

jest.setTimeout(180_000);

const survey = (keyword: string) => ({
  trigger: { type: 'keyword', keywords: [keyword] },
  nodes: [
    { id: 'hi', type: 'message', content: 'Hi!', next: 'ask' },
    {
      id: 'ask',
      type: 'form',
      fields: [
        { name: 'score', type: 'rating', required: true, label: 'Rate us 1-5' },
        { name: 'recommend', type: 'nps', required: true, label: 'Recommend us 0-10?' },
      ],
      next: 'bye',
    },
    { id: 'bye', type: 'message', content: 'Thanks!' },
  ],
});

describe('analytics rollups fed by real executions', () => {
  let t: TestApp;
  let key: string;
  const children: SpawnedProcess[] = [];
  const spawnWorker = (extra: Record<string, string> = {}) => {
    const p = spawnService('worker', t, { EXECUTION_RECONCILE_INTERVAL_MS: '200', EXECUTION_RECONCILE_GRACE_MS: '0', ...extra });
    children.push(p);
    return p;
  };

  // Tests that crash no worker run it in-process (no process start); the crash test spawns its own.
  let inProcess: TestWorker | undefined;
  const startInProcessWorker = async () => {
    inProcess = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    return inProcess;
  };

  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  // All tests share one task queue: a worker left by a test must not take the next test's tasks.
  afterEach(async () => {
    await inProcess?.stop();
    inProcess = undefined;
    for (const c of children.splice(0)) await c.kill('SIGKILL');
  });
  afterAll(() => t.close());

  const send = (customer: string, message: string) =>
    t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message });
  const waitForPrompt = (executionId: string) =>
    waitFor(
      async () => (await t.query(`select 1 from executions where id = ? and waiting_node_id is not null`, [executionId])).length > 0,
      `a form prompt of ${executionId}`,
      60_000,
    );
  const analytics = async (wf: string) => (await t.request.get(`/v1/analytics/workflows/${wf}`).set(bearer(key))).body.data;

  it('counts what ran, with ratings, re-asked invalid scores and messages, as the workflow metrics do', async () => {
    const wf = await createActiveWorkflow(t, key, { name: 'Survey', channel: 'whatsapp', configuration: survey('survey') });
    const worker = await startInProcessWorker();

    const answers: Array<[string, string, string]> = [
      ['a-1', '5', '10'],
      ['a-2', '2', '3'],
    ];
    for (const [customer, rating, nps] of answers) {
      const started = await send(customer, 'survey please');
      const id = started.body.data.executions[0].id as string;
      await waitForPrompt(id);
      // Out of range: re-asked like any invalid reply.
      expect((await send(customer, '6')).body.data.status).toBe('resumed');
      await waitFor(async () => (await t.query(`select 1 from messages where execution_id = ? and direction = 'outbound'`, [id])).length >= 3, 're-ask', 60_000);
      await waitForPrompt(id);
      await send(customer, rating);
      await waitFor(async () => (await t.query(`select 1 from messages where execution_id = ? and direction = 'outbound'`, [id])).length >= 4, 'nps prompt', 60_000);
      await waitForPrompt(id);
      await send(customer, nps);
      const done = await waitForExecution(t, key, wf, id, 'success', 60_000);
      expect(done.steps.find((s: { node_id: string }) => s.node_id === 'ask').output).toMatchObject({
        form_data: { score: rating, recommend: nps },
        scores: { rating: [Number(rating)], nps: [Number(nps)] },
      });
    }

    const a = await analytics(wf);
    const metrics = (await t.request.get(`/v1/workflows/${wf}/metrics`).set(bearer(key))).body.data;
    // Per execution: hi, rating prompt, re-ask, nps prompt, thanks = 5 sent; opening, 6, rating, nps = 4 received.
    expect(a.metrics).toEqual({
      total_executions: 2,
      successful_executions: 2,
      failed_executions: 0,
      success_rate: 1,
      average_duration_ms: metrics.metrics.average_duration_ms,
      unique_customers: 2,
      channel_breakdown: { whatsapp: 2 },
      total_messages_sent: 10,
      total_messages_received: 8,
      customer_satisfaction: 3.5,
      net_promoter_score: 0,
    });
    expect(metrics.metrics).toMatchObject({ total_executions: 2, successful_executions: 2, unique_customers: 2, total_messages_sent: 10, total_messages_received: 8 });
    const perf = (await t.request.get(`/v1/analytics/workflows/${wf}/performance`).set(bearer(key))).body.data.performance;
    expect(perf.node_performance.map((n: { node_id: string; execution_count: number }) => [n.node_id, n.execution_count])).toEqual([
      ['hi', 2],
      ['ask', 2],
      ['bye', 2],
    ]);
    await worker.stop();
  });

  it('a burst of messages to one workflow: every start and finish counted once, every message on its workflow', async () => {
    const wf = await createActiveWorkflow(t, key, {
      name: 'Burst',
      channel: 'instagram',
      configuration: { trigger: { type: 'keyword', keywords: ['burst'] }, nodes: [{ id: 'hi', type: 'message', content: 'Hi!' }] },
    });
    const worker = await startInProcessWorker();

    // Concurrent transactions that start (and then finish) executions of the same workflow:
    // its counters and rollup rows are updated at commit, each once per fact.
    const burst = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'instagram', customer_id: `burst-${i}`, message: 'burst please' }),
      ),
    );
    expect(burst.map((r) => [r.status, r.body.data?.status ?? r.body])).toEqual(Array.from({ length: 12 }, () => [201, 'started']));
    for (const r of burst) await waitForExecution(t, key, wf, r.body.data.executions[0].id, 'success', 60_000);

    const got = (await t.request.get(`/v1/workflows/${wf}`).set(bearer(key))).body.data;
    expect(got).toMatchObject({ execution_count: 12, success_rate: 1 });
    const [org] = await t.query<{ organization_id: string }>('select organization_id from workflows where id = ?', [wf]);
    // Each inbound message was written already linked to its execution: none was counted
    // under "no workflow yet" and moved.
    const rows = await t.query<{ workflow_id: string; messages_in: number; messages_out: number; started: number; succeeded: number }>(
      `select workflow_id, sum(messages_in)::int as messages_in, sum(messages_out)::int as messages_out, sum(started)::int as started, sum(succeeded)::int as succeeded
         from analytics_hourly where organization_id = ? and channel = 'instagram' group by workflow_id order by workflow_id`,
      [org!.organization_id],
    );
    expect(rows).toEqual([{ workflow_id: wf, messages_in: 12, messages_out: 12, started: 12, succeeded: 12 }]);
    expect((await analytics(wf)).metrics).toMatchObject({ total_executions: 12, successful_executions: 12, total_messages_received: 12, total_messages_sent: 12 });
    await worker.stop();
  });

  it('a worker killed right after committing a finish: the retried finish counts nothing more', async () => {
    const wf = await createActiveWorkflow(t, key, {
      name: 'Crash count',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['count'] }, nodes: [{ id: 'only', type: 'message', content: 'counted' }] },
    });
    const first = spawnWorker({ FAILPOINTS: 'execution.after_finish' });
    await first.waitForLine(/worker running/, 60_000);
    const id = (await send('crash-count', 'count me')).body.data.executions[0].id as string;
    await first.exited;
    expect(first.lines.join('\n')).toContain('failpoint execution.after_finish: SIGKILL');
    // Committed and counted once already.
    expect((await t.query<{ status: string }>('select status from executions where id = ?', [id]))[0]!.status).toBe('success');

    const second = spawnWorker();
    await second.waitForLine(/worker running/, 60_000);
    // The run completes on the second worker, which ran the finish again (a no-op).
    await waitFor(
      async () => (await t.services.temporal.client.workflow.getHandle(id).describe()).status.name === 'COMPLETED',
      'the run to complete on the second worker',
      90_000,
    );
    const [rollup] = await t.query<{ started: number; succeeded: number; hist: number; out: number }>(
      `select sum(started)::int as started, sum(succeeded)::int as succeeded,
              sum((select sum(v) from unnest(latency_hist) v))::int as hist, sum(messages_out)::int as out
         from analytics_hourly where workflow_id = ?`,
      [wf],
    );
    expect(rollup).toEqual({ started: 1, succeeded: 1, hist: 1, out: 1 });
    expect((await analytics(wf)).metrics).toMatchObject({ total_executions: 1, successful_executions: 1, total_messages_sent: 1, total_messages_received: 1 });
    await second.kill('SIGTERM');
  });

  it('the migrated database runs exactly the rollup functions of src/db/sql/analytics-rollups.sql', async () => {
    const defined = rollupFunctionNames().sort();
    const definitions = `select proname, pg_get_functiondef(oid) as def from pg_proc where proname like 'analytics\\_%' order by proname`;
    const client = new Client({ connectionString: t.databaseUrl });
    await client.connect();
    try {
      await client.query('begin');
      const migrated = (await client.query<{ proname: string; def: string }>(definitions)).rows;
      // No rollup function outside the file (a migration defining one inline would show here).
      expect(migrated.map((r) => r.proname)).toEqual(defined);
      await client.query(rollupFunctionsSql());
      // Applying the file changes no definition: the migrations left the file's.
      expect((await client.query<{ proname: string; def: string }>(definitions)).rows).toEqual(migrated);
    } finally {
      await client.query('rollback').catch(() => undefined);
      await client.end();
    }
  });
});
