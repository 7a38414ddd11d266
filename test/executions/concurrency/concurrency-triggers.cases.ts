/**
 * The per-customer concurrency rule for trigger firings (API triggers here; schedule and
 * webhook firings take the same path): a fire whose input names a customer whose
 * conversation with the workflow is running is skipped under the default rule, queued under
 * `queue` (and runs once the conversation ends), replaces it under `replace`; a fire with
 * no customer starts regardless. Real API, Temporal worker, reconciler and channel provider.
 */
import { createActivities } from '../../../temporal/activities';
import { runExecutionReconciler } from '../../../src/reconciler';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitForExecution } from '../helpers';

describe('one conversation per customer: API trigger firings', () => {
  let provider: ChannelProvider;
  let t: TestApp;
  let worker: TestWorker;
  let stopReconciler: () => Promise<void>;
  let key: string;

  beforeAll(async () => {
    provider = await startChannelProvider();
    // The reconciler starts a promoted execution at its next pass: passes every 100 ms here.
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url, EXECUTION_RECONCILE_INTERVAL_MS: '100', EXECUTION_RECONCILE_GRACE_MS: '0' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    stopReconciler = runExecutionReconciler(t.services);
    ({ key } = await t.createKey('admin'));
  });
  afterAll(async () => {
    await stopReconciler();
    await worker.stop();
    await t.close();
    await provider.close();
  });

  /**
   * A workflow started by its keyword and by an API trigger, whose customer `customer` has
   * a conversation running (its welcome held at the provider until `release`).
   */
  async function conversationRunning(keyword: string, customer: string, concurrency?: object) {
    const content = `Welcome ${keyword}`;
    const workflowId = await createActiveWorkflow(t, key, {
      name: keyword,
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: [keyword] }, ...(concurrency ? { concurrency } : {}), nodes: [{ id: 'hi', type: 'message', content }] },
    });
    const trigger = await t.request.post('/v1/triggers').set(bearer(key)).send({ name: `${keyword} api`, type: 'api', workflow_id: workflowId, configuration: {} });
    expect(trigger.status).toBe(201);
    expect((await t.request.post(`/v1/triggers/${trigger.body.data.id}/activate`).set(bearer(key))).status).toBe(200);
    const release = provider.holdText(content);
    const message = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: keyword });
    expect(message.body.data.status).toBe('started');
    return { workflowId, triggerId: trigger.body.data.id as string, running: message.body.data.executions[0].id as string, release };
  }

  const fire = (triggerId: string, body: object) => t.request.post(`/v1/triggers/${triggerId}/fire`).set(bearer(key)).send(body);

  it('skip (the default): a fire naming the customer starts nothing and says why; one without a customer starts', async () => {
    const { workflowId, triggerId, running, release } = await conversationRunning('skipfire', '+15550300001');
    const skipped = await fire(triggerId, { customer_id: '+15550300001', order: 1 });
    expect(skipped.status).toBe(201);
    expect(skipped.body.data).toMatchObject({ status: 'skipped', output: { workflow_execution_id: null }, completed_at: expect.any(String) });
    const detail = await t.request.get(`/v1/triggers/${triggerId}/executions/${skipped.body.data.id}`).set(bearer(key));
    expect(detail.body.data.error).toMatchObject({ code: 'already_running' });

    const anonymous = await fire(triggerId, { order: 2 });
    expect(anonymous.status).toBe(201);
    expect(anonymous.body.data.status).toBe('running');
    const rows = await t.query<{ id: string; status: string }>('select id, status from executions where workflow_id = ? order by started_at', [workflowId]);
    expect(rows).toEqual([{ id: running, status: 'running' }, { id: anonymous.body.data.output.workflow_execution_id, status: 'running' }]);
    release();
    await waitForExecution(t, key, workflowId, running, 'success');
  });

  it('queue: a fire naming the customer is queued, then runs after the conversation', async () => {
    const { workflowId, triggerId, running, release } = await conversationRunning('queuefire', '+15550300002', { per: 'customer', limit: 1, on_conflict: 'queue' });
    const queued = await fire(triggerId, { customer_id: '+15550300002', order: 1 });
    expect(queued.status).toBe(201);
    expect(queued.body.data.status).toBe('queued');
    const queuedId = queued.body.data.output.workflow_execution_id as string;
    expect((await t.request.get(`/v1/workflows/${workflowId}/executions/${queuedId}`).set(bearer(key))).body.data).toMatchObject({ status: 'queued', completed_at: null });
    release();
    const first = await waitForExecution(t, key, workflowId, running, 'success');
    const after = await waitForExecution(t, key, workflowId, queuedId, 'success');
    expect(after.input).toMatchObject({ customer_id: '+15550300002', order: 1 });
    expect(Date.parse(after.started_at)).toBeGreaterThanOrEqual(Date.parse(first.completed_at));
  });

  it('replace: a fire naming the customer cancels the running conversation and starts', async () => {
    const { workflowId, triggerId, running, release } = await conversationRunning('replacefire', '+15550300003', { per: 'customer', limit: 1, on_conflict: 'replace' });
    const replacing = await fire(triggerId, { customer_id: '+15550300003' });
    expect(replacing.status).toBe(201);
    expect(replacing.body.data.status).toBe('running');
    const cancelled = await waitForExecution(t, key, workflowId, running, 'cancelled');
    expect(cancelled.output).toMatchObject({ next_action: 'cancelled' });
    release();
    await waitForExecution(t, key, workflowId, replacing.body.data.output.workflow_execution_id, 'success');
  });
  it('a message firing skipped because the queue is full records queue_full', async () => {
    const content = 'Welcome fullqueue';
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'fullqueue',
      channel: 'whatsapp',
      configuration: { concurrency: { per: 'customer', limit: 1, on_conflict: 'queue' }, nodes: [{ id: 'hi', type: 'message', content }] },
    });
    const trigger = await t.request.post('/v1/triggers').set(bearer(key)).send({ name: 'fullqueue', type: 'message', workflow_id: workflowId, configuration: { keywords: ['fullqueue'] } });
    expect((await t.request.post(`/v1/triggers/${trigger.body.data.id}/activate`).set(bearer(key))).status).toBe(200);
    const release = provider.holdText(content);
    const statuses = [];
    for (let i = 0; i < 12; i++) {
      statuses.push((await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: '+15550300004', message: 'fullqueue' })).body.data.status);
    }
    release();
    expect(statuses).toEqual(['started', ...Array(10).fill('queued'), 'skipped']);
    const skipped = await t.request.get(`/v1/triggers/${trigger.body.data.id}/executions?status=skipped`).set(bearer(key));
    expect(skipped.body.data).toHaveLength(1);
    const detail = await t.request.get(`/v1/triggers/${trigger.body.data.id}/executions/${skipped.body.data[0].id}`).set(bearer(key));
    expect(detail.body.data).toMatchObject({ status: 'skipped', error: { code: 'queue_full' } });
  });
});
