/**
 * Nothing lost, nothing doubled: real processes are SIGKILLed at the worst moments.
 *
 * 1. The API dies right after committing an inbound message that matches a message
 *    trigger and a workflow's own keywords (message, trigger execution, both execution
 *    rows, their events: one transaction) and before starting anything on Temporal: the
 *    worker's reconciler starts both executions, exactly once each.
 * 2. The API dies after committing an api trigger's firing and its execution, right
 *    before the Temporal start (`execution.before_temporal_start`): the reconciler starts
 *    it exactly once.
 * 3. The worker dies while executions are between steps (a send in flight) and while one
 *    waits for a form reply: after a restart every execution completes, each step is
 *    recorded once and each message stored once.
 *
 * Every wait is bounded and polls for a state (never a sleep that assumes timing).
 */
import { reconcileOnce } from '../../src/reconciler';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { startChannelProvider } from '../helpers/channel-provider';
import { freePort, type SpawnedProcess, spawnService } from '../helpers/process';
import { createActiveWorkflow, waitFor, waitForExecution } from './helpers';

jest.setTimeout(180_000);

describe('crash safety of executions', () => {
  let t: TestApp;
  let key: string;
  const children: SpawnedProcess[] = [];

  const spawnMain = (role: 'api' | 'worker', extra: Record<string, string> = {}) => {
    const p = spawnService(role, t, {
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      EXECUTION_RECONCILE_INTERVAL_MS: '200',
      EXECUTION_RECONCILE_GRACE_MS: '0',
      ...extra,
    });
    children.push(p);
    return p;
  };

  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  // Both tests share one task queue: a process left by a failed test must not steal the
  // next test's tasks (a worker without its provider URL would "send" the held messages).
  afterEach(async () => {
    for (const c of children.splice(0)) await c.kill('SIGKILL');
  });
  afterAll(async () => {
    await t.close();
  });

  it('an API killed right after committing a message that fires a trigger: one trigger execution, each execution started exactly once', async () => {
    const configured = await createActiveWorkflow(t, key, {
      name: 'Crash API',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['order'] },
        nodes: [
          { id: 'one', type: 'message', content: 'first', next: 'two' },
          { id: 'two', type: 'message', content: 'second' },
        ],
      },
    });
    const triggered = await createActiveWorkflow(t, key, {
      name: 'Crash API trigger',
      channel: 'whatsapp',
      configuration: { nodes: [{ id: 'ack', type: 'message', content: 'order noted' }] },
    });
    const trigger = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'Orders', type: 'message', workflow_id: triggered, channel: 'whatsapp', configuration: { keywords: ['order'] } });
    expect(trigger.status).toBe(201);
    const triggerId = trigger.body.data.id as string;

    const port = await freePort();
    const api = spawnMain('api', { PORT: String(port), FAILPOINTS: 'message.after_commit' });
    await api.waitForLine(/API listening/, 60_000);
    const posted = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(key) },
      body: JSON.stringify({ channel: 'whatsapp', customer_id: 'crash-1', message: 'my order' }),
    }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(posted).toBe('connection lost');
    await api.exited;
    expect(api.lines.join('\n')).toContain('failpoint message.after_commit: SIGKILL');

    // All committed together, nothing started.
    const rows = await t.query<{ id: string; workflow_id: string; trigger_id: string | null; temporal_started_at: Date | null; message_id: string }>(
      'select id, workflow_id, trigger_id, temporal_started_at, message_id from executions where workflow_id in (?, ?) order by workflow_id = ? desc',
      [configured, triggered, configured],
    );
    expect(rows.map((r) => [r.workflow_id, r.trigger_id])).toEqual([
      [configured, null],
      [triggered, triggerId],
    ]);
    for (const r of rows) expect(r.temporal_started_at).toBeNull();
    const messageId = rows[0]!.message_id;
    expect(rows[1]!.message_id).toBe(messageId);
    expect(await t.query('select id from messages where id = ? and direction = ?', [messageId, 'inbound'])).toHaveLength(1);
    const firings = await t.query<{ id: string; execution_id: string; status: string }>(
      'select id, execution_id, status from trigger_executions where trigger_id = ?',
      [triggerId],
    );
    expect(firings).toEqual([{ id: expect.any(String), execution_id: rows[1]!.id, status: 'running' }]);
    for (const r of rows) await expect(t.services.temporal.client.workflow.getHandle(r.id).describe()).rejects.toThrow();

    // A worker process comes up; its reconciler starts both executions.
    const worker = spawnMain('worker');
    await worker.waitForLine(/worker running/, 60_000);
    const done = await waitForExecution(t, key, configured, rows[0]!.id, 'success', 60_000);
    expect(done.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['one', 'two']);
    const fired = await waitForExecution(t, key, triggered, rows[1]!.id, 'success', 60_000);
    expect(fired).toMatchObject({ trigger_id: triggerId, steps: [expect.objectContaining({ node_id: 'ack' })] });

    // Exactly once: further reconciler passes and a racing start change nothing.
    expect(await reconcileOnce(t.services, 0)).toEqual({ started: 0, redelivered: 0, cancelled: 0, jobs: 0 });
    for (const r of rows) {
      const runs: string[] = [];
      for await (const wf of t.services.temporal.client.workflow.list({ query: `WorkflowId = '${r.id}'` })) runs.push(wf.runId);
      expect(runs).toHaveLength(1);
      expect(await t.query(`select 1 from events where type = 'workflow.started' and data->>'execution_id' = ?`, [r.id])).toHaveLength(1);
    }
    expect(await t.query('select 1 from executions where workflow_id in (?, ?)', [configured, triggered])).toHaveLength(2);
    expect(await t.query(`select 1 from events where type = 'trigger.activated' and data->>'trigger_id' = ?`, [triggerId])).toHaveLength(1);
    const detail = await t.request.get(`/v1/triggers/${triggerId}`).set(bearer(key));
    expect(detail.body.data.execution_count).toBe(1);
    const te = await t.request.get(`/v1/triggers/${triggerId}/executions/${firings[0]!.id}`).set(bearer(key));
    expect(te.body.data).toMatchObject({ status: 'success', output: { workflow_execution_id: rows[1]!.id } });
    await worker.kill('SIGTERM');
  });

  it('an API killed after committing a trigger firing and before its Temporal start: the reconciler starts it exactly once', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Crash before start',
      channel: 'whatsapp',
      configuration: { nodes: [{ id: 'ack', type: 'message', content: 'fired' }] },
    });
    const trigger = await t.request.post('/v1/triggers').set(bearer(key)).send({ name: 'Api crash', type: 'api', workflow_id: workflowId, configuration: {} });
    expect(trigger.status).toBe(201);
    const triggerId = trigger.body.data.id as string;

    const port = await freePort();
    const api = spawnMain('api', { PORT: String(port), FAILPOINTS: 'execution.before_temporal_start' });
    await api.waitForLine(/API listening/, 60_000);
    const fired = await fetch(`http://127.0.0.1:${port}/v1/triggers/${triggerId}/fire`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(key) },
      body: JSON.stringify({ order: 7 }),
    }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(fired).toBe('connection lost');
    await api.exited;
    expect(api.lines.join('\n')).toContain('failpoint execution.before_temporal_start: SIGKILL');

    // The firing and its execution are committed; nothing is started on Temporal.
    const rows = await t.query<{ id: string; temporal_started_at: Date | null }>('select id, temporal_started_at from executions where workflow_id = ?', [workflowId]);
    expect(rows).toEqual([{ id: expect.any(String), temporal_started_at: null }]);
    const executionId = rows[0]!.id;
    expect(await t.query('select execution_id, status from trigger_executions where trigger_id = ?', [triggerId])).toEqual([{ execution_id: executionId, status: 'running' }]);
    await expect(t.services.temporal.client.workflow.getHandle(executionId).describe()).rejects.toThrow();

    // A worker's reconciler starts it, once.
    const worker = spawnMain('worker');
    await worker.waitForLine(/worker running/, 60_000);
    const done = await waitForExecution(t, key, workflowId, executionId, 'success', 60_000);
    expect(done).toMatchObject({ trigger_id: triggerId, steps: [expect.objectContaining({ node_id: 'ack' })] });
    expect(await reconcileOnce(t.services, 0)).toEqual({ started: 0, redelivered: 0, cancelled: 0, jobs: 0 });
    const runs: string[] = [];
    for await (const wf of t.services.temporal.client.workflow.list({ query: `WorkflowId = '${executionId}'` })) runs.push(wf.runId);
    expect(runs).toHaveLength(1);
    expect(await t.query(`select 1 from events where type = 'workflow.started' and data->>'execution_id' = ?`, [executionId])).toHaveLength(1);
    expect((await t.request.get(`/v1/triggers/${triggerId}`).set(bearer(key))).body.data.execution_count).toBe(1);
    await worker.kill('SIGTERM');
  });

  it('a worker killed mid-execution and during a form wait: after a restart all complete, each step recorded once', async () => {
    // A channel provider that holds every "second" message until released.
    const provider = await startChannelProvider();
    const release = provider.holdText('second');
    const keys = provider.keys;
    const held = () => provider.received.filter((m) => m.text === 'second').map((m) => m.idempotencyKey);
    const providerUrl = provider.url;
    try {
      const steps = await createActiveWorkflow(t, key, {
        name: 'Three steps',
        channel: 'instagram',
        configuration: {
          trigger: { type: 'keyword', keywords: ['steps'] },
          nodes: [
            { id: 'a', type: 'message', content: 'first', next: 'b' },
            { id: 'b', type: 'message', content: 'second', next: 'c' },
            { id: 'c', type: 'message', content: 'third' },
          ],
        },
      });
      const form = await createActiveWorkflow(t, key, {
        name: 'Form crash',
        channel: 'voice',
        configuration: {
          trigger: { type: 'keyword', keywords: ['form'] },
          nodes: [
            { id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Name?' }], next: 'bye' },
            { id: 'bye', type: 'message', content: 'bye' },
          ],
        },
      });
      // A held send stays one attempt until the activity's 10 s start-to-close (not the 5 s
      // provider timeout), so a slow machine cannot burn the node's 5 attempts before the kill.
      const workerEnv = { CHANNEL_PROVIDER_URL: providerUrl, CHANNEL_PROVIDER_TIMEOUT_MS: '60000' };
      const first = spawnMain('worker', workerEnv);
      await first.waitForLine(/worker running/, 60_000);

      const stepIds: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'instagram', customer_id: `s-${i}`, message: 'steps' });
        stepIds.push(res.body.data.executions[0].id);
      }
      const formRes = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'voice', customer_id: 'f-1', message: 'form' });
      const formId = formRes.body.data.executions[0].id as string;

      // Between steps: "a" recorded and "b" in flight for every execution; the form waits.
      // Waited for together (the held sends age meanwhile), each bounded, with the state on failure.
      const diagnose = async (err: Error) => {
        const state = await t.query(
          `select e.id, e.status, e.temporal_started_at, array_agg(s.node_id) as steps from executions e
             left join execution_steps s on s.execution_id = e.id where e.id in (?, ?, ?, ?) group by e.id`,
          [...stepIds, formId],
        );
        throw new Error(`${err.message}; held=${JSON.stringify(held())} keys=${JSON.stringify(keys)} state=${JSON.stringify(state)}\n${first.lines.slice(-30).join('\n')}`);
      };
      await Promise.all([
        waitFor(async () => (new Set(held()).size === 3 ? true : undefined), 'three held sends', 90_000),
        ...stepIds.map((id) => waitForExecution(t, key, steps, id, (x) => x.steps.length === 1 && x.status === 'running', 90_000)),
        waitForExecution(t, key, form, formId, (x) => x.output?.next_action === 'wait_for_input', 90_000),
      ]).catch(diagnose);

      await first.kill('SIGKILL');
      release();
      // The reply arrives while no worker runs: Temporal keeps the signal.
      const reply = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'voice', customer_id: 'f-1', message: 'Grace' });
      expect(reply.body.data.status).toBe('resumed');

      const second = spawnMain('worker', workerEnv);
      await second.waitForLine(/worker running/, 60_000);
      for (const id of stepIds) {
        const d = await waitForExecution(t, key, steps, id, 'success', 90_000);
        expect(d.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['a', 'b', 'c']);
      }
      const f = await waitForExecution(t, key, form, formId, 'success', 60_000);
      expect(f.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['ask', 'bye']);
      expect(f.steps[0].output).toEqual({ form_data: { name: 'Grace' } });

      // Recorded once: steps, transcript rows, completions and counters.
      for (const id of stepIds) {
        const outbound = await t.query<{ text: string }>(`select text from messages where execution_id = ? and direction = 'outbound' order by created_at`, [id]);
        expect(outbound.map((m) => m.text)).toEqual(['first', 'second', 'third']);
        expect(await t.query(`select 1 from events where type = 'workflow.completed' and data->>'execution_id' = ?`, [id])).toHaveLength(1);
      }
      const wf = await t.request.get(`/v1/workflows/${steps}`).set(bearer(key));
      expect(wf.body.data).toMatchObject({ execution_count: 3, success_rate: 1 });
      // The provider may see a re-sent message after the crash, but always under its step's
      // idempotency key: the keys seen for each text are exactly one per execution.
      for (const [text, node] of [['first', 'a'], ['second', 'b'], ['third', 'c']] as const) {
        const seen = new Set(provider.received.filter((m) => m.text === text).map((m) => m.idempotencyKey));
        expect({ text, keys: [...seen].sort() }).toEqual({ text, keys: stepIds.map((id) => `${id}:${node}`).sort() });
      }
      await second.kill('SIGTERM');
    } finally {
      await provider.close();
    }
  });
});
