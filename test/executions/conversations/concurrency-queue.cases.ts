/**
 * `configuration.concurrency.on_conflict: "queue"` and `"replace"`, end to end: two API apps
 * on one database (two "processes"), one Temporal worker, the durable-start reconciler and
 * a local channel provider.
 *
 * - queue: 20 customers × 5 rapid "hello"s; each customer's first execution runs (its
 *   welcome held at the provider), the other four are `queued`; once released, each
 *   customer's five run one after another, never overlapping, in message order;
 * - the bound: an 11th waiting message is skipped with `queue_full`;
 * - replace: five simultaneous messages of one customer leave exactly one execution
 *   running, the others cancelled;
 * - a promoted execution starts as soon as the database announces its promotion, with no
 *   reconciler pass;
 * - a queued execution survives the API process that queued it and a worker that was down
 *   meanwhile: it starts once the running one ends.
 */
import { createActivities } from '../../../temporal/activities';
import { runExecutionReconciler } from '../../../src/reconciler';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitForExecution } from '../helpers';

describe('one conversation per customer: queue and replace', () => {
  let provider: ChannelProvider;
  let t: TestApp;
  let other: TestApp;
  let worker: TestWorker;
  let stopReconciler: () => Promise<void>;
  let key: string;

  beforeAll(async () => {
    provider = await startChannelProvider();
    // The worker's reconciler at its production settings: a promoted execution is started
    // when the database announces it, not at a pass (passes every 5 s, for rows 5 s old).
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url });
    other = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_TASK_QUEUE: t.config.TEMPORAL_TASK_QUEUE, CHANNEL_PROVIDER_URL: provider.url });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    stopReconciler = runExecutionReconciler(t.services);
    ({ key } = await t.createKey('admin'));
  });
  afterAll(async () => {
    await stopReconciler();
    await worker.stop();
    await other.close();
    await t.close();
    await provider.close();
  });

  const send = (app: TestApp, body: object) => app.request.post('/v1/messages').set(bearer(key)).send(body);

  /** A workflow started by its own keyword (each test its own, so no other workflow matches its messages). */
  async function workflowWith(name: string, keyword: string, onConflict: string, nodes: object[]) {
    return await createActiveWorkflow(t, key, {
      name,
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: [keyword] }, concurrency: { per: 'customer', limit: 1, on_conflict: onConflict }, nodes },
    });
  }

  it('queue: 20 customers × 5 rapid "hello"s run one after another per customer, in message order', async () => {
    const workflowId = await workflowWith('Queued welcome', 'hello', 'queue', [{ id: 'hi', type: 'message', content: 'Queued welcome' }]);
    const release = provider.holdText('Queued welcome');
    const customers = Array.from({ length: 20 }, (_, i) => `+1555020${String(i).padStart(4, '0')}`);
    // Each customer's messages in order (one after the other), the customers all at once, through both apps.
    const answers = await Promise.all(
      customers.map(async (customer, c) => {
        const mine = [];
        for (let i = 0; i < 5; i++) mine.push(await send((c + i) % 2 === 0 ? t : other, { channel: 'whatsapp', customer_id: customer, message: `hello ${i}` }));
        return mine;
      }),
    );
    for (const mine of answers) {
      expect(mine.map((a) => a.status)).toEqual([201, 201, 201, 201, 201]);
      expect(mine.map((a) => a.body.data.status)).toEqual(['started', 'queued', 'queued', 'queued', 'queued']);
      expect(mine[1]!.body.data.executions).toEqual([{ id: expect.stringMatching(/^exec_/), workflow_id: workflowId, trigger_id: null, action: 'queued' }]);
    }
    // A queued execution says so.
    const queuedId = answers[0]![1]!.body.data.executions[0].id as string;
    const queued = await t.request.get(`/v1/workflows/${workflowId}/executions/${queuedId}`).set(bearer(key));
    expect(queued.body.data).toMatchObject({ status: 'queued', queued_at: expect.any(String), completed_at: null });

    release();
    const ids = answers.map((mine) => mine.map((a) => a.body.data.executions[0].id as string));
    for (const mine of ids) for (const id of mine) await waitForExecution(t, key, workflowId, id, 'success');

    const rows = await t.query<{ id: string; customer_id: string; input: { message: string }; started_at: Date; completed_at: Date }>(
      'select id, customer_id, input, started_at, completed_at from executions where workflow_id = ? order by customer_id, started_at',
      [workflowId],
    );
    expect(rows).toHaveLength(100);
    for (const mine of ids) {
      const runs = rows.filter((r) => mine.includes(r.id));
      // In message order, and each started after the previous one ended.
      expect(runs.map((r) => r.id)).toEqual(mine);
      expect(runs.map((r) => r.input.message)).toEqual(['hello 0', 'hello 1', 'hello 2', 'hello 3', 'hello 4']);
      for (let i = 1; i < runs.length; i++) expect(new Date(runs[i]!.started_at).getTime()).toBeGreaterThanOrEqual(new Date(runs[i - 1]!.completed_at).getTime());
    }
  });

  it('queue: beyond 10 waiting, a message is skipped with queue_full', async () => {
    const workflowId = await workflowWith('Bounded queue', 'bounded', 'queue', [{ id: 'hi', type: 'message', content: 'Bounded welcome' }]);
    const release = provider.holdText('Bounded welcome');
    const outcomes = [];
    for (let i = 0; i < 12; i++) outcomes.push((await send(i % 2 ? t : other, { channel: 'whatsapp', customer_id: 'bounded-1', message: 'bounded' })).body.data);
    expect(outcomes.map((o) => o.status)).toEqual(['started', ...Array(10).fill('queued'), 'skipped']);
    expect(outcomes[11].executions).toEqual([
      { id: outcomes[0].executions[0].id, workflow_id: workflowId, trigger_id: null, action: 'skipped', reason: 'queue_full' },
    ]);
    release();
    await waitForExecution(t, key, workflowId, outcomes[10].executions[0].id, 'success');
  });

  it('replace: five simultaneous messages of one customer leave exactly one execution running', async () => {
    const workflowId = await workflowWith('Replacing welcome', 'replace', 'replace', [{ id: 'hi', type: 'message', content: 'Replacing welcome' }]);
    // Held at the provider: every execution is still running when the next message arrives.
    const release = provider.holdText('Replacing welcome');
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => send(i % 2 ? t : other, { channel: 'whatsapp', customer_id: 'replace-1', message: 'replace me' })));
    expect(answers.map((a) => a.body.data.status)).toEqual(Array(5).fill('started'));
    const started = answers.map((a) => a.body.data.executions[0].id as string);
    const rows = await t.query<{ id: string; status: string }>('select id, status from executions where workflow_id = ?', [workflowId]);
    expect(rows.map((r) => r.id).sort()).toEqual([...started].sort());
    expect(rows.filter((r) => r.status === 'running')).toHaveLength(1);
    expect(rows.filter((r) => r.status === 'cancelled')).toHaveLength(4);
    // Every start but the first names the execution it cancelled, each a different one.
    const replaced = answers.map((a) => a.body.data.executions[0].replaced_execution_id).filter(Boolean);
    expect(replaced).toHaveLength(4);
    expect(new Set(replaced)).toEqual(new Set(rows.filter((r) => r.status === 'cancelled').map((r) => r.id)));
    release();
    const survivor = rows.find((r) => r.status === 'running')!.id;
    await waitForExecution(t, key, workflowId, survivor, 'success');
    for (const r of rows.filter((x) => x.status === 'cancelled')) {
      const e = await waitForExecution(t, key, workflowId, r.id, 'cancelled');
      expect(e.output).toMatchObject({ next_action: 'cancelled' });
    }
  });

  it('queue: a promoted execution starts when the running one ends, announced by the database, with no reconciler pass', async () => {
    // This reconciler passes every 10 minutes and leaves rows younger than 10 minutes alone:
    // only the announcement of the promotion can start the queued execution.
    await stopReconciler();
    const slow = await createTestApp({
      DATABASE_URL: t.databaseUrl,
      TEMPORAL_TASK_QUEUE: t.config.TEMPORAL_TASK_QUEUE,
      EXECUTION_RECONCILE_INTERVAL_MS: '600000',
      EXECUTION_RECONCILE_GRACE_MS: '600000',
    });
    const stopSlow = runExecutionReconciler(slow.services);
    try {
      const workflowId = await workflowWith('Announced', 'announce', 'queue', [{ id: 'hi', type: 'message', content: 'Announced welcome' }]);
      const release = provider.holdText('Announced welcome');
      const first = await send(t, { channel: 'whatsapp', customer_id: 'announce-1', message: 'announce' });
      const second = await send(other, { channel: 'whatsapp', customer_id: 'announce-1', message: 'announce again' });
      expect([first.body.data.status, second.body.data.status]).toEqual(['started', 'queued']);
      release();
      await waitForExecution(t, key, workflowId, first.body.data.executions[0].id, 'success');
      const done = await waitForExecution(t, key, workflowId, second.body.data.executions[0].id, 'success');
      expect(done).toMatchObject({ input: { message: 'announce again' } });
      const [row] = await t.query<{ stamped: boolean }>('select temporal_started_at is not null as stamped from executions where id = ?', [done.id]);
      expect(row!.stamped).toBe(true);
    } finally {
      await stopSlow();
      await slow.close();
      stopReconciler = runExecutionReconciler(t.services);
    }
  });

  it('a queued execution survives a restart of the API process that queued it and a worker that was down', async () => {
    const workflowId = await workflowWith('Durable queue', 'durable', 'queue', [{ id: 'hi', type: 'message', content: 'Durable welcome' }]);
    // No worker: the first execution is running (recorded, its run not picked up) while the second queues.
    await worker.stop();
    const restartedApi = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_TASK_QUEUE: t.config.TEMPORAL_TASK_QUEUE, CHANNEL_PROVIDER_URL: provider.url });
    const running = await send(restartedApi, { channel: 'whatsapp', customer_id: 'durable-1', message: 'durable' });
    const waiting = await send(restartedApi, { channel: 'whatsapp', customer_id: 'durable-1', message: 'durable again' });
    expect(running.body.data.status).toBe('started');
    expect(waiting.body.data.status).toBe('queued');
    // The process that queued it is gone; only PostgreSQL knows about the queued execution.
    await restartedApi.close();
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    await waitForExecution(t, key, workflowId, running.body.data.executions[0].id, 'success');
    const done = await waitForExecution(t, key, workflowId, waiting.body.data.executions[0].id, 'success');
    expect(done).toMatchObject({ input: { message: 'durable again' }, queued_at: expect.any(String) });
  });
});
