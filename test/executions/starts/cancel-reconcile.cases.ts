/**
 * The cancel's dual write, end to end (real API, PostgreSQL, Temporal worker): a cancel
 * whose Temporal request was lost is re-sent by the reconciler loop, so a run waiting on a
 * form closes now instead of at its form timeout (24 h here); a cancel that reached
 * Temporal is stamped at cancel time and never re-sent.
 *
 * As in test/executions/conversations/races.cases.ts, "an API whose Temporal calls are lost" is a second app on the same
 * database whose client points at another namespace.
 */
import { runExecutionReconciler, reconcileOnce } from '../../../src/reconciler';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('re-sending lost Temporal cancels', () => {
  let t: TestApp;
  let lost: TestApp;
  let worker: TestWorker;
  let key: string;
  let workflowId: string;

  beforeAll(async () => {
    // A fast loop with no grace, so "once the reconciler runs" is a short bounded wait.
    t = await createTestApp({ EXECUTION_RECONCILE_INTERVAL_MS: '200', EXECUTION_RECONCILE_GRACE_MS: '0' });
    lost = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_NAMESPACE: 'wfa-test-nowhere' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
    workflowId = await createActiveWorkflow(t, key, {
      name: 'Waiting form',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['join'] },
        // Default form timeout (24 h): only a cancel can close the run within the test.
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Your name?' }], next: 'bye' },
          { id: 'bye', type: 'message', content: 'Joined (must never be sent).' },
        ],
      },
    });
  });
  afterAll(async () => {
    await worker.stop();
    await lost.close();
    await t.close();
  });

  /** Starts an execution and waits until its form waits for the reply. */
  const startWaiting = async (customer: string): Promise<string> => {
    const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: 'join' });
    const id = res.body.data.executions[0].id as string;
    await waitForExecution(t, key, workflowId, id, (d) => d.output?.next_action === 'wait_for_input');
    return id;
  };
  const cancel = (app: TestApp, id: string) => app.request.post(`/v1/workflows/${workflowId}/executions/${id}/cancel`).set(bearer(key));
  const stamp = async (id: string) =>
    (await t.query<{ temporal_cancelled_at: Date | null }>('select temporal_cancelled_at from executions where id = ?', [id]))[0]!.temporal_cancelled_at;
  const runStatus = async (id: string) => (await t.services.temporal.client.workflow.getHandle(id).describe()).status.name;
  const waitClosed = (id: string) =>
    waitFor(async () => {
      const s = await runStatus(id);
      return s === 'RUNNING' ? undefined : s;
    }, `the run of ${id} to close`);

  it('a waiting execution whose Temporal cancel was lost has its run cancelled once the reconciler runs', async () => {
    const id = await startWaiting('l-1');
    expect((await cancel(lost, id)).body.data.status).toBe('cancelled');
    // The cancel never reached Temporal: the row is cancelled, unstamped, the run still waits.
    expect(await stamp(id)).toBeNull();
    expect(await runStatus(id)).toBe('RUNNING');
    // Within the grace period the reconciler leaves it to the API's own attempt.
    expect(await reconcileOnce(t.services, 600_000)).toEqual({ started: 0, redelivered: 0, cancelled: 0, jobs: 0 });
    expect(await stamp(id)).toBeNull();

    const stop = runExecutionReconciler(t.services);
    try {
      // The run was waiting in the workflow (no activity to find the row cancelled): the
      // re-sent cancel is what closes it.
      expect(await waitClosed(id)).toBe('CANCELLED');
      await waitFor(async () => ((await stamp(id)) ? true : undefined), `the cancel of ${id} to be stamped`);
    } finally {
      await stop();
    }

    const d = await waitForExecution(t, key, workflowId, id, 'cancelled');
    expect(d.steps).toEqual([]);
    const outbound = await t.query<{ text: string }>(`select text from messages where execution_id = ? and direction = 'outbound'`, [id]);
    expect(outbound).toEqual([{ text: 'Your name?' }]);
    expect(await t.query(`select 1 from events where type = 'workflow.completed' and data->>'execution_id' = ?`, [id])).toHaveLength(1);
  });

  it('a cancel that reached Temporal is stamped at cancel time and not re-sent; a closed run counts as done', async () => {
    const id = await startWaiting('r-1');
    expect((await cancel(t, id)).body.data.status).toBe('cancelled');
    const stamped = await stamp(id);
    expect(stamped).not.toBeNull();
    expect(await waitClosed(id)).toBe('CANCELLED');

    const getHandle = jest.spyOn(t.services.temporal.client.workflow, 'getHandle');
    try {
      expect(await reconcileOnce(t.services, 0)).toEqual({ started: 0, redelivered: 0, cancelled: 0, jobs: 0 });
      expect(getHandle).not.toHaveBeenCalled();
    } finally {
      getHandle.mockRestore();
    }
    expect(await stamp(id)).toEqual(stamped);

    // A pending cancel of a run that already closed (Temporal answers "not found") is done.
    await t.query('update executions set temporal_cancelled_at = null where id = ?', [id]);
    expect(await reconcileOnce(t.services, 0)).toEqual({ started: 0, redelivered: 0, cancelled: 1, jobs: 0 });
    expect(await stamp(id)).not.toBeNull();
    expect(await runStatus(id)).toBe('CANCELLED');
  });
});
