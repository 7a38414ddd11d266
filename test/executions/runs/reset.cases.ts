/**
 * An operator resets a failed execution in Temporal, after fixing the cause, to a point
 * before its failing node: the API follows the new run (success, one step per node, the
 * run it was reset from), and the workflow's counters and the analytics rollups count the
 * execution once.
 */
import { randomUUID } from 'node:crypto';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('resetting a failed execution in Temporal', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let provider: ChannelProvider;

  beforeAll(async () => {
    provider = await startChannelProvider();
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await provider.close();
  });

  it('ends in success with exactly one step per node, the counters and rollups counting it once, and says which run it was reset from', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Orders',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['order'] },
        nodes: [
          { id: 'hi', type: 'message', content: 'Hello!', next: 'ask' },
          { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'ship' },
          { id: 'ship', type: 'message', content: 'Your order shipped.' },
        ],
      },
    });
    // The cause: the provider refuses the last message once (a final 4xx: the node fails with api_error).
    provider.answer('Your order shipped.', 400);
    const say = (message: string) => t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: '+15550000042', message });
    const executionId: string = (await say('order')).body.data.executions[0].id;
    await waitForExecution(t, key, workflowId, executionId, (d) => d.output?.next_action === 'wait_for_input');
    await say('ada@example.com');
    const failed = await waitForExecution(t, key, workflowId, executionId, 'failed');
    expect(failed.error.type).toBe('api_error');
    expect(failed.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([
      ['hi', 'completed'],
      ['ask', 'completed'],
      ['ship', 'failed'],
    ]);

    const client = t.services.temporal.client;
    const handle = client.workflow.getHandle(executionId);
    await expect(handle.result()).rejects.toThrow();
    const failedRunId = (await handle.describe()).runId;

    // Reset to the workflow task after the form's answers were recorded (the last task-queue
    // activity): before the failing node, after the nodes that must not run again.
    const history = (await handle.fetchHistory()).events ?? [];
    const lastActivity = history.map((e) => !!e.activityTaskCompletedEventAttributes).lastIndexOf(true);
    const resetPoint = history.slice(lastActivity).find((e) => e.workflowTaskStartedEventAttributes);
    expect(resetPoint).toBeDefined();
    const reset = await client.workflowService.resetWorkflowExecution({
      namespace: t.config.TEMPORAL_NAMESPACE,
      workflowExecution: { workflowId: executionId, runId: failedRunId },
      reason: 'channel provider fixed',
      workflowTaskFinishEventId: resetPoint!.eventId,
      requestId: randomUUID(),
    });
    expect(reset.runId).toBeTruthy();
    expect(reset.runId).not.toBe(failedRunId);

    const done = await waitForExecution(t, key, workflowId, executionId, 'success');
    await client.workflow.getHandle(executionId, reset.runId!).result();
    expect(done.error).toBeNull();
    expect(done.reset_from_run_id).toBe(failedRunId);
    expect(done.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([
      ['hi', 'completed'],
      ['ask', 'completed'],
      ['ship', 'completed'],
    ]);
    // Sent once each: the nodes before the reset point were not run again.
    expect(provider.sent.filter((r) => r.text === 'Hello!')).toHaveLength(1);
    expect(provider.sent.filter((r) => r.text === 'Your order shipped.').map((r) => r.status)).toEqual([400, 200]);

    const wf = await t.request.get(`/v1/workflows/${workflowId}`).set(bearer(key));
    expect(wf.body.data).toMatchObject({ execution_count: 1, success_rate: 1 });
    const [counters] = await t.query<{ success_count: number; failure_count: number }>(
      'select success_count, failure_count from workflows where id = ?',
      [workflowId],
    );
    expect(counters).toEqual({ success_count: 1, failure_count: 0 });
    const rollup = await waitFor(async () => {
      const [r] = await t.query<{ started: string; succeeded: string; failed: string }>(
        'select sum(started)::text as started, sum(succeeded)::text as succeeded, sum(failed)::text as failed from analytics_hourly where workflow_id = ?',
        [workflowId],
      );
      return r?.succeeded === '1' ? r : undefined;
    }, 'the rollup to count the success');
    expect(rollup).toEqual({ started: '1', succeeded: '1', failed: '0' });
    const nodes = await t.query<{ node_id: string; steps: string; failed_steps: string }>(
      `select node_id, sum(steps)::text as steps, sum(failed_steps)::text as failed_steps from analytics_node_hourly
        where workflow_id = ? group by node_id order by node_id`,
      [workflowId],
    );
    expect(nodes).toEqual([
      { node_id: 'ask', steps: '1', failed_steps: '0' },
      { node_id: 'hi', steps: '1', failed_steps: '0' },
      { node_id: 'ship', steps: '1', failed_steps: '0' },
    ]);
  });
});
