/**
 * Races around a running execution, end to end (real API, PostgreSQL, Temporal worker and
 * a local channel provider):
 *
 * - a reply that arrives while the form prompt is still being sent reaches that execution
 *   (the wait opens before the send) instead of starting executions by trigger matching;
 * - a reply whose signal was lost resumes the run when the reconciler re-delivers it;
 * - a reply racing the form's timeout is never swallowed: if it claimed the wait first the
 *   form takes it even when its signal never arrives; once the timeout closed the wait,
 *   the next message goes through normal trigger matching;
 * - a cancel made while the worker is stopped: after the restart nothing more is sent,
 *   also when the Temporal cancel never reached the run.
 *
 * "An API whose Temporal calls do not reach the run" is a second app on the same database
 * whose client points at another namespace: its signals and cancels are lost, as when
 * Temporal is unreachable at that moment.
 */
// First: lowers the form timeout minimum before the workflow schemas load.
import '../../helpers/short-form-timeouts';
import { reconcileOnce } from '../../../src/reconciler';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('races around a running execution', () => {
  let provider: ChannelProvider;
  let t: TestApp;
  let lost: TestApp;
  let worker: TestWorker;
  let key: string;

  const startWorker = () => startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });

  beforeAll(async () => {
    provider = await startChannelProvider();
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url });
    lost = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_NAMESPACE: 'wfa-test-nowhere', CHANNEL_PROVIDER_URL: provider.url });
    worker = await startWorker();
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await lost.close();
    await t.close();
    await provider.close();
  });

  const send = (app: TestApp, body: object) => app.request.post('/v1/messages').set(bearer(key)).send(body);
  const outbound = (executionId: string) =>
    t.query<{ text: string }>(`select text from messages where execution_id = ? and direction = 'outbound' order by created_at`, [executionId]);

  it('a reply sent while the form prompt is still being sent resumes that execution and starts nothing else', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Quote form',
      channel: 'instagram',
      configuration: {
        trigger: { type: 'keyword', keywords: ['quote'] },
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Who is the quote for?' }], next: 'thanks' },
          { id: 'thanks', type: 'message', content: 'Thanks, quote coming.' },
        ],
      },
    });
    const release = provider.holdText('Who is the quote for?');
    const started = await send(t, { channel: 'instagram', customer_id: 'q-1', message: 'I want a quote' });
    const executionId = started.body.data.executions[0].id as string;
    // The prompt is at the provider and not answered yet: the send is in flight.
    await waitFor(async () => (provider.arrived.includes('Who is the quote for?') ? true : undefined), 'the prompt send to reach the provider');
    expect(await outbound(executionId)).toEqual([]);

    // The reply even matches the trigger keyword; it still belongs to the form.
    const reply = await send(t, { channel: 'instagram', customer_id: 'q-1', message: 'Ada, about my quote' });
    expect(reply.body.data).toMatchObject({ status: 'resumed', executions: [{ id: executionId, action: 'resumed' }] });
    release();

    const done = await waitForExecution(t, key, workflowId, executionId, 'success');
    expect(done.steps[0]).toMatchObject({ node_id: 'ask', output: { form_data: { name: 'Ada, about my quote' } } });
    expect(await t.query('select 1 from executions where workflow_id = ?', [workflowId])).toHaveLength(1);
    expect(await outbound(executionId)).toEqual([{ text: 'Who is the quote for?' }, { text: 'Thanks, quote coming.' }]);
  });

  it('a reply whose signal never reached the run resumes it when the reconciler re-delivers it, long before the form times out', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Name form',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['register'] },
        nodes: [
          { id: 'ask', type: 'form', timeout_seconds: 3600, fields: [{ name: 'name', type: 'text', required: true, label: 'Your name?' }], next: 'ok' },
          { id: 'ok', type: 'message', content: 'Welcome.' },
        ],
      },
    });
    const started = await send(t, { channel: 'whatsapp', customer_id: 'r-1', message: 'register' });
    const id = started.body.data.executions[0].id as string;
    await waitForExecution(t, key, workflowId, id, (d) => d.output?.next_action === 'wait_for_input');

    // Committed and claimed, but its signal is lost (a call cut off at TEMPORAL_CALL_TIMEOUT_MS on a loaded machine).
    const reply = await send(lost, { channel: 'whatsapp', customer_id: 'r-1', message: 'Ada' });
    expect(reply.body.data).toMatchObject({ status: 'resumed', executions: [{ id, action: 'resumed' }] });
    const unconfirmed = () => t.query<{ delivered_at: Date | null }>('select delivered_at from messages where id = ?', [reply.body.data.message_id]);
    expect((await unconfirmed())[0]!.delivered_at).toBeNull();

    expect(await reconcileOnce(t.services, 0)).toMatchObject({ redelivered: 1 });
    expect((await unconfirmed())[0]!.delivered_at).not.toBeNull();
    const done = await waitForExecution(t, key, workflowId, id, 'success');
    expect(done.steps[0].output).toEqual({ form_data: { name: 'Ada' } });
    expect((await outbound(id)).map((m) => m.text)).toEqual(['Your name?', 'Welcome.']);
  });

  it('a reply racing the form timeout is never swallowed: a claimed reply is taken without its signal; after the wait closed, trigger matching', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Callback form',
      channel: 'voice',
      configuration: {
        trigger: { type: 'keyword', keywords: ['callback'] },
        nodes: [
          { id: 'ask', type: 'form', timeout_seconds: 4, fields: [{ name: 'phone', type: 'phone', required: true, label: 'Your number?' }], next: 'ok' },
          { id: 'ok', type: 'message', content: 'We will call you.' },
        ],
      },
    });
    // Two customers at once: c-1 replies but the signal is lost, c-2 never replies.
    const [one, two] = await Promise.all(
      ['c-1', 'c-2'].map(async (customer) => {
        const res = await send(t, { channel: 'voice', customer_id: customer, message: 'callback please' });
        return res.body.data.executions[0].id as string;
      }),
    );
    await Promise.all([one!, two!].map((id) => waitForExecution(t, key, workflowId, id, (d) => d.output?.next_action === 'wait_for_input')));

    const reply = await send(lost, { channel: 'voice', customer_id: 'c-1', message: '+1 555 0100' });
    expect(reply.body.data).toMatchObject({ status: 'resumed', executions: [{ id: one, action: 'resumed' }] });
    const [claimed] = await t.query<{ reply_to_wait: string | null; delivered_at: Date | null }>(
      'select reply_to_wait, delivered_at from messages where id = ?',
      [reply.body.data.message_id],
    );
    expect(claimed).toEqual({ reply_to_wait: `${one}:ask:phone:1`, delivered_at: null });

    // When c-1's timeout fires, the form reads the claimed reply from PostgreSQL.
    const done = await waitForExecution(t, key, workflowId, one!, (d) => d.status !== 'running', 60_000);
    expect(done.status).toBe('success');
    expect(done.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['ask', 'ok']);
    expect(done.steps[0].output).toEqual({ form_data: { phone: '+1 555 0100' } });
    // A late re-delivery of the reply finds the run closed and changes nothing.
    await reconcileOnce(t.services, 0);
    const [after] = await t.query<{ delivered_at: Date | null }>('select delivered_at from messages where id = ?', [reply.body.data.message_id]);
    expect(after!.delivered_at).not.toBeNull();
    expect((await waitForExecution(t, key, workflowId, one!, 'success')).steps).toHaveLength(2);

    // c-2 timed out: its wait is closed, so its next messages are not replies to it.
    const failed = await waitForExecution(t, key, workflowId, two!, 'failed', 60_000);
    expect(failed.error).toMatchObject({ type: 'timeout' });
    const late = await send(t, { channel: 'voice', customer_id: 'c-2', message: '+1 555 0199' });
    expect(late.body.data).toMatchObject({ status: 'no_match', executions: [] });
    const again = await send(t, { channel: 'voice', customer_id: 'c-2', message: 'callback again' });
    expect(again.body.data).toMatchObject({ status: 'started', executions: [{ workflow_id: workflowId, action: 'started' }] });
    expect(again.body.data.executions[0].id).not.toBe(two);
    await waitForExecution(t, key, workflowId, again.body.data.executions[0].id, (d) => d.output?.next_action === 'wait_for_input');
    await t.request.post(`/v1/workflows/${workflowId}/executions/${again.body.data.executions[0].id}/cancel`).set(bearer(key)).expect(200);
  });

  it('a cancel while the worker is stopped: after the restart nothing more is sent, even if the Temporal cancel was lost', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Cancelled form',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['signup'] },
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Name for the signup?' }], next: 'bye' },
          { id: 'bye', type: 'message', content: 'Signed up (must never be sent).' },
        ],
      },
    });
    const ids: string[] = [];
    for (const customer of ['x-1', 'x-2']) {
      const res = await send(t, { channel: 'whatsapp', customer_id: customer, message: 'signup' });
      ids.push(res.body.data.executions[0].id as string);
    }
    // Both prompts sent and stored: no activity in flight when the worker stops.
    for (const id of ids) await waitFor(async () => ((await outbound(id)).length === 1 ? true : undefined), `the prompt of ${id}`);
    await worker.stop();

    // Replies reach Temporal (the worker is down); then both executions are cancelled,
    // x-2's through the API whose Temporal cancel is lost.
    for (const customer of ['x-1', 'x-2']) {
      expect((await send(t, { channel: 'whatsapp', customer_id: customer, message: 'Grace' })).body.data.status).toBe('resumed');
    }
    const cancel = (app: TestApp, id: string) => app.request.post(`/v1/workflows/${workflowId}/executions/${id}/cancel`).set(bearer(key));
    expect((await cancel(t, ids[0]!)).body.data.status).toBe('cancelled');
    expect((await cancel(lost, ids[1]!)).body.data.status).toBe('cancelled');

    worker = await startWorker();
    const closed = await Promise.all(
      ids.map((id) =>
        waitFor(
          async () => {
            const d = await t.services.temporal.client.workflow.getHandle(id).describe();
            return d.status.name === 'RUNNING' ? undefined : d.status.name;
          },
          `the run of ${id} to close`,
          60_000,
        ),
      ),
    );
    // x-1's run got the cancel; x-2's stopped at its first activity, which found the row cancelled.
    expect(closed).toEqual(['CANCELLED', 'COMPLETED']);
    expect(await t.services.temporal.client.workflow.getHandle(ids[1]!).result()).toMatchObject({ status: 'cancelled' });

    expect(provider.arrived).not.toContain('Signed up (must never be sent).');
    for (const id of ids) {
      const d = await waitForExecution(t, key, workflowId, id, 'cancelled');
      expect(d.steps).toEqual([]);
      expect(await outbound(id)).toEqual([{ text: 'Name for the signup?' }]);
      expect(await t.query(`select 1 from events where type = 'workflow.completed' and data->>'execution_id' = ?`, [id])).toHaveLength(1);
    }
  });
});
