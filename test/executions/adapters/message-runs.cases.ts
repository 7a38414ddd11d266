/**
 * Consecutive message nodes run as ONE local activity (`runMessageRun`), with the
 * completion when they end the execution, against a real channel provider (a local HTTP
 * server), PostgreSQL and a Temporal worker:
 *
 * - the happy path is one local-activity marker in the run's history, every step, message
 *   and event recorded once;
 * - a provider failing for a moment on the second node: the run stops there, that node is
 *   retried on its own (same idempotency key), the rest runs on, each step recorded once;
 * - a provider refusing the second node for good: the execution fails on that node with
 *   api_error, and the refused message was sent once;
 * - a cancel that lands while the first node's message is being sent (its Temporal cancel
 *   lost): the next node is never sent.
 */
import { temporal } from '@temporalio/proto';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('runs of message nodes', () => {
  let provider: ChannelProvider;
  let t: TestApp;
  let lost: TestApp;
  let worker: TestWorker;
  let key: string;

  beforeAll(async () => {
    provider = await startChannelProvider();
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url });
    // Same database, another namespace: its Temporal cancels never reach the run.
    lost = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_NAMESPACE: 'wfa-test-nowhere', CHANNEL_PROVIDER_URL: provider.url });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await lost.close();
    await t.close();
    await provider.close();
  });

  /** A workflow of three message nodes whose texts start with `prefix`; returns its id and the texts. */
  async function threeMessages(prefix: string) {
    const texts = ['one', 'two', 'three'].map((n) => `${prefix} ${n}`);
    const workflowId = await createActiveWorkflow(t, key, {
      name: `Run ${prefix}`,
      channel: 'instagram',
      configuration: {
        trigger: { type: 'keyword', keywords: [prefix] },
        nodes: [
          { id: 'a', type: 'message', content: texts[0], next: 'b' },
          { id: 'b', type: 'message', content: texts[1], next: 'c' },
          { id: 'c', type: 'message', content: texts[2] },
        ],
      },
    });
    return { workflowId, texts };
  }

  const start = async (app: TestApp, prefix: string, customer: string) => {
    const res = await app.request.post('/v1/messages').set(bearer(key)).send({ channel: 'instagram', customer_id: customer, message: prefix });
    expect(res.status).toBe(201);
    return res.body.data.executions[0].id as string;
  };
  const outbound = async (executionId: string) =>
    (await t.query<{ text: string }>(`select text from messages where execution_id = ? and direction = 'outbound' order by created_at`, [executionId])).map((m) => m.text);
  const sentTo = (executionId: string) => provider.sent.filter((s) => s.idempotencyKey.startsWith(`${executionId}:`));
  const localActivities = async (executionId: string) => {
    const history = await t.services.temporal.client.workflow.getHandle(executionId).fetchHistory();
    const events = history.events ?? [];
    const ofType = (t: temporal.api.enums.v1.EventType) => events.filter((e) => e.eventType === t).length;
    return {
      markers: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
      taskQueueActivities: ofType(temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
      // A patch marker would come with one (TemporalChangeVersion): the version is in the input instead.
      searchAttributeUpserts: ofType(temporal.api.enums.v1.EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES),
    };
  };

  it('three message nodes and the completion are one local activity; each step, message and event recorded once', async () => {
    const { workflowId, texts } = await threeMessages('happy');
    const id = await start(t, 'happy', 'run-1');
    const done = await waitForExecution(t, key, workflowId, id, 'success');
    expect(done.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
    ]);
    expect(done.output).toEqual({ response: texts[2], next_action: 'end' });
    expect(await outbound(id)).toEqual(texts);
    expect(sentTo(id).map((s) => [s.text, s.idempotencyKey])).toEqual([
      [texts[0], `${id}:a`],
      [texts[1], `${id}:b`],
      [texts[2], `${id}:c`],
    ]);
    expect(await t.query(`select 1 from events where type = 'message.sent' and data->>'execution_id' = ?`, [id])).toHaveLength(3);
    expect(await t.query(`select 1 from events where type = 'workflow.completed' and data->>'execution_id' = ?`, [id])).toHaveLength(1);
    // What an operator sees in the Temporal UI: the run's result, and one local activity for the whole run.
    expect(await t.services.temporal.client.workflow.getHandle(id).result()).toEqual({ status: 'success', output: { response: texts[2], next_action: 'end' } });
    expect(await localActivities(id)).toEqual({ markers: 1, taskQueueActivities: 0, searchAttributeUpserts: 0 });
  });

  it('a provider failing for a moment on the second node: that node is retried on its own, the rest runs on, each once', async () => {
    const { workflowId, texts } = await threeMessages('flaky');
    provider.answer(texts[1]!, 503);
    const id = await start(t, 'flaky', 'run-2');
    const done = await waitForExecution(t, key, workflowId, id, 'success');
    expect(done.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['a', 'b', 'c']);
    expect(await outbound(id)).toEqual(texts);
    expect(sentTo(id).map((s) => [s.text, s.status])).toEqual([
      [texts[0], 200],
      [texts[1], 503],
      [texts[1], 200],
      [texts[2], 200],
    ]);
    // The retry kept the idempotency key.
    expect(new Set(sentTo(id).filter((s) => s.text === texts[1]).map((s) => s.idempotencyKey))).toEqual(new Set([`${id}:b`]));
    expect(await t.query(`select 1 from events where type = 'message.sent' and data->>'execution_id' = ?`, [id])).toHaveLength(3);
    // The run (a), node b on its own, then the run of c with the completion.
    await t.services.temporal.client.workflow.getHandle(id).result();
    expect(await localActivities(id)).toMatchObject({ markers: 3, taskQueueActivities: 0 });
  });

  it('a provider refusing the second node: the execution fails there with api_error; the refused message was sent once', async () => {
    const { workflowId, texts } = await threeMessages('refused');
    provider.answer(texts[1]!, 400);
    const id = await start(t, 'refused', 'run-3');
    const failed = await waitForExecution(t, key, workflowId, id, 'failed');
    expect(failed.error).toEqual({ type: 'api_error', message: expect.stringContaining('400') });
    expect(failed.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([
      ['a', 'completed'],
      ['b', 'failed'],
    ]);
    expect(sentTo(id).map((s) => [s.text, s.status])).toEqual([
      [texts[0], 200],
      [texts[1], 400],
    ]);
    expect(await outbound(id)).toEqual([texts[0]]);
    // The Temporal run fails too, as for any failed node (just after the row: the finish is written first).
    await expect(t.services.temporal.client.workflow.getHandle(id).result()).rejects.toMatchObject({
      cause: { message: 'node b failed: channel provider answered 400', type: 'api_error' },
    });
  });

  it('a cancel while the first message is being sent (its Temporal cancel lost): the next node is never sent', async () => {
    const { workflowId, texts } = await threeMessages('cancelled');
    const release = provider.holdText(texts[0]!);
    const id = await start(t, 'cancelled', 'run-4');
    await waitFor(async () => (provider.arrived.includes(texts[0]!) ? true : undefined), 'the first send to be in flight');
    const cancelled = await lost.request.post(`/v1/workflows/${workflowId}/executions/${id}/cancel`).set(bearer(key));
    expect(cancelled.body.data.status).toBe('cancelled');
    release();
    // The run learns of the cancel from the first step's own write and stops.
    expect(await t.services.temporal.client.workflow.getHandle(id).result()).toMatchObject({ status: 'cancelled' });
    expect(sentTo(id).map((s) => s.text)).toEqual([texts[0]]);
    expect(await outbound(id)).toEqual([texts[0]]);
    const d = await waitForExecution(t, key, workflowId, id, 'cancelled');
    expect(d.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['a']);
  });
});
