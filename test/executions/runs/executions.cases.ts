/**
 * End to end through the real API, PostgreSQL and a real Temporal worker: inbound messages
 * start executions whose steps are recorded, forms wait for replies, executions can be
 * listed, retried and cancelled, and the workflow's counters and events stay true.
 */
// First: lowers the form timeout minimum before the workflow schemas load.
import '../../helpers/short-form-timeouts';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('executions', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp();
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
    reader = (await t.createKey('read')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
  });

  const send = (body: object, k = key) => t.request.post('/v1/messages').set(bearer(k)).send(body);

  it('a message matching configuration.trigger runs the workflow to success with every step recorded', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Greeter',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['hello'] },
        nodes: [
          { id: 'welcome', type: 'message', content: 'Hi! Welcome.', next: 'bye' },
          { id: 'bye', type: 'message', content: 'Talk soon.' },
        ],
      },
    });
    const res = await send({ channel: 'whatsapp', customer_id: '+15550001', message: 'Hello there', customer: { name: 'Ada' } });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      message_id: expect.stringMatching(/^msg_/),
      customer_id: expect.stringMatching(/^cus_/),
      status: 'started',
      executions: [{ id: expect.stringMatching(/^exec_/), workflow_id: workflowId, trigger_id: null, action: 'started' }],
    });
    const executionId = res.body.data.executions[0].id;
    const customerId = res.body.data.customer_id;

    const detail = await waitForExecution(t, reader, workflowId, executionId, 'success');
    expect(detail).toMatchObject({
      id: executionId,
      workflow_id: workflowId,
      status: 'success',
      customer_id: customerId,
      channel: 'whatsapp',
      input: { message: 'Hello there' },
      output: { response: 'Talk soon.', next_action: 'end' },
      error: null,
    });
    expect(detail.duration_ms).toEqual(expect.any(Number));
    expect(Date.parse(detail.completed_at)).toBeGreaterThanOrEqual(Date.parse(detail.started_at));
    expect(detail.steps).toEqual([
      {
        node_id: 'welcome',
        type: 'message',
        status: 'completed',
        started_at: expect.any(String),
        completed_at: expect.any(String),
        duration_ms: expect.any(Number),
        input: { content: 'Hi! Welcome.' },
        output: { message_sent: 'Hi! Welcome.' },
        error: null,
      },
      expect.objectContaining({ node_id: 'bye', type: 'message', status: 'completed', output: { message_sent: 'Talk soon.' } }),
    ]);

    // The transcript: the inbound message and both outbound ones, in order.
    const transcript = await t.request.get(`/v1/customers/${customerId}/messages`).set(bearer(reader));
    expect(transcript.status).toBe(200);
    expect(transcript.body.data.map((m: { direction: string; text: string }) => [m.direction, m.text])).toEqual([
      ['inbound', 'Hello there'],
      ['outbound', 'Hi! Welcome.'],
      ['outbound', 'Talk soon.'],
    ]);
    const customer = await t.request.get(`/v1/customers/${customerId}`).set(bearer(reader));
    expect(customer.body.data).toMatchObject({ id: customerId, channel: 'whatsapp', external_id: '+15550001', name: 'Ada' });

    // Counters on the workflow.
    const wf = await t.request.get(`/v1/workflows/${workflowId}`).set(bearer(reader));
    expect(wf.body.data).toMatchObject({ execution_count: 1, success_rate: 1 });

    // Events in the outbox, with the contract's data for workflow events.
    const events = await t.query<{ type: string; data: Record<string, unknown> }>(
      `select type, data from events where data->>'execution_id' = ? or data->>'customer_id' = ? order by created_at, type`,
      [executionId, customerId],
    );
    const types = events.map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['customer.created', 'message.received', 'workflow.started', 'message.sent', 'workflow.completed']));
    expect(types.filter((x) => x === 'message.sent')).toHaveLength(2);
    expect(types).not.toContain('workflow.failed');
    const completed = events.find((e) => e.type === 'workflow.completed')!;
    expect(completed.data).toEqual({
      workflow_id: workflowId,
      execution_id: executionId,
      status: 'success',
      duration_ms: detail.duration_ms,
      customer_id: customerId,
      channel: 'whatsapp',
    });

    // Lists and filters.
    const list = await t.request.get(`/v1/workflows/${workflowId}/executions?status=success`).set(bearer(reader));
    expect(list.body.pagination).toEqual({ page: 1, limit: 20, total: 1, pages: 1 });
    expect(list.body.data[0].steps).toBeUndefined();
    const none = await t.request.get(`/v1/workflows/${workflowId}/executions?status=failed`).set(bearer(reader));
    expect(none.body.pagination.total).toBe(0);
  });

  it('a workflow matched by both a message trigger and its own keywords runs once, attributed to the trigger', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Attributed',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['refund'] }, nodes: [{ id: 'm', type: 'message', content: 'On it.' }] },
    });
    const trigger = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'Refunds', type: 'message', workflow_id: workflowId, channel: 'whatsapp', configuration: { keywords: ['refund'] } });
    expect(trigger.status).toBe(201);
    const res = await send({ channel: 'whatsapp', customer_id: '+15550002', message: 'I want a refund' });
    expect(res.body.data.executions).toEqual([
      { id: expect.stringMatching(/^exec_/), workflow_id: workflowId, trigger_id: trigger.body.data.id, action: 'started' },
    ]);
    const done = await waitForExecution(t, reader, workflowId, res.body.data.executions[0].id, 'success');
    expect(done.trigger_id).toBe(trigger.body.data.id);
    expect(await t.query('select 1 from executions where workflow_id = ?', [workflowId])).toHaveLength(1);
  });

  it('a message that matches nothing is recorded and starts nothing; unknown channel and bad bodies are 400', async () => {
    const res = await send({ channel: 'instagram', customer_id: 'ig-user', message: 'no keyword here' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'no_match', executions: [] });

    const before = await t.query<{ n: number }>('select count(*)::int as n from messages');
    for (const [body, field] of [
      [{ channel: 'telegram', customer_id: 'x', message: 'hello' }, 'channel'],
      [{ channel: 'whatsapp', message: 'hello' }, 'customer_id'],
      [{ channel: 'whatsapp', customer_id: 'x', message: '' }, 'message'],
      [{ channel: 'whatsapp', customer_id: 'x', message: 'hello', extra: 1 }, 'extra'],
      [{ channel: 'whatsapp', customer_id: 'x', message: 'a'.repeat(5000) }, 'message'],
      [{ channel: 'whatsapp', customer_id: 'x', message: 42 }, 'message'],
    ] as const) {
      const bad = await send(body);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ code: expect.stringMatching(/INVALID_REQUEST|MISSING_REQUIRED_FIELD/), field });
    }
    expect(await t.query('select count(*)::int as n from messages')).toEqual(before);
    const forbidden = await send({ channel: 'whatsapp', customer_id: 'x', message: 'hello' }, reader);
    expect(forbidden.status).toBe(403);
  });

  it('a form waits for the reply (running, wait_for_input), re-asks an invalid one, and stores the answers', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Lead form',
      channel: 'instagram',
      configuration: {
        trigger: { type: 'keyword', keywords: ['quote'] },
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'thanks' },
          { id: 'thanks', type: 'message', content: 'Thanks, we will be in touch.' },
        ],
      },
    });
    const started = await send({ channel: 'instagram', customer_id: 'lead-1', message: 'I want a quote' });
    const executionId = started.body.data.executions[0].id;
    const waiting = await waitForExecution(t, reader, workflowId, executionId, (d) => d.output?.next_action === 'wait_for_input');
    expect(waiting.status).toBe('running');
    expect(waiting.steps).toEqual([]);

    const invalid = await send({ channel: 'instagram', customer_id: 'lead-1', message: 'not an email' });
    expect(invalid.body.data).toMatchObject({ status: 'resumed', executions: [{ id: executionId, action: 'resumed' }] });
    // Re-asked: a second prompt appears in the transcript.
    const customerId = started.body.data.customer_id;
    await waitFor(async () => {
      const tr = await t.request.get(`/v1/customers/${customerId}/messages`).set(bearer(reader));
      return tr.body.data.filter((m: { direction: string }) => m.direction === 'outbound').length === 2 ? true : undefined;
    }, 'the re-asked prompt');

    const valid = await send({ channel: 'instagram', customer_id: 'lead-1', message: ' ada@example.com ' });
    expect(valid.body.data.status).toBe('resumed');
    const done = await waitForExecution(t, reader, workflowId, executionId, 'success');
    expect(done.steps.map((s: { node_id: string }) => s.node_id)).toEqual(['ask', 'thanks']);
    expect(done.steps[0]).toMatchObject({ type: 'form', status: 'completed', output: { form_data: { email: 'ada@example.com' } } });
    expect(done.output).toMatchObject({ response: 'Thanks, we will be in touch.', next_action: 'end', form_data: { ask: { email: 'ada@example.com' } } });
  });

  it('a form that gets no reply in time fails the execution with error type timeout; retry re-runs it', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Impatient form',
      channel: 'voice',
      configuration: {
        trigger: { type: 'keyword', keywords: ['callback'] },
        nodes: [{ id: 'ask', type: 'form', timeout_seconds: 4, fields: [{ name: 'phone', type: 'phone', required: true, label: 'Number?' }] }],
      },
    });
    const started = await send({ channel: 'voice', customer_id: 'caller-1', message: 'callback please' });
    const executionId = started.body.data.executions[0].id;
    const failed = await waitForExecution(t, reader, workflowId, executionId, 'failed', 40_000);
    expect(failed.error).toEqual({ type: 'timeout', message: expect.stringContaining('phone') });
    expect(failed.steps).toEqual([expect.objectContaining({ node_id: 'ask', status: 'failed', error: { type: 'timeout', message: expect.any(String) } })]);
    const wf = await t.request.get(`/v1/workflows/${workflowId}`).set(bearer(reader));
    expect(wf.body.data).toMatchObject({ execution_count: 1, success_rate: 0 });
    const failedEvents = await t.query<{ data: unknown }>(`select data from events where type = 'workflow.failed' and data->>'execution_id' = ?`, [executionId]);
    expect(failedEvents.map((e) => e.data)).toEqual([
      {
        workflow_id: workflowId,
        execution_id: executionId,
        status: 'failed',
        duration_ms: failed.duration_ms,
        customer_id: failed.customer_id,
        channel: 'voice',
        error_type: 'timeout',
        error_message: failed.error.message,
      },
    ]);

    const retried = await t.request.post(`/v1/workflows/${workflowId}/executions/${executionId}/retry`).set(bearer(key));
    expect(retried.status).toBe(201);
    expect(retried.body.data).toMatchObject({ status: 'running', retry_of: executionId, input: { message: 'callback please' } });
    expect(retried.body.data.id).not.toBe(executionId);

    // Cancel the retry while it waits; a second cancel is a conflict.
    const retryId = retried.body.data.id;
    await waitForExecution(t, reader, workflowId, retryId, (d) => d.output?.next_action === 'wait_for_input');
    const cancelled = await t.request.post(`/v1/workflows/${workflowId}/executions/${retryId}/cancel`).set(bearer(key));
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ id: retryId, status: 'cancelled' });
    const again = await t.request.post(`/v1/workflows/${workflowId}/executions/${retryId}/cancel`).set(bearer(key));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('EXECUTION_NOT_RUNNING');
    // Its workflow.completed says `cancelled`, a status the published WorkflowEventData lists.
    const [event] = await t.query<{ data: Record<string, unknown> }>(
      "select data from events where type = 'workflow.completed' and data->>'execution_id' = ?",
      [retryId],
    );
    expect(event?.data).toMatchObject({ workflow_id: workflowId, execution_id: retryId, status: 'cancelled' });
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema((await t.request.get('/v1/openapi.json')).body, 'openapi.json');
    const validateEvent = ajv.getSchema('openapi.json#/components/schemas/WorkflowEventData')!;
    expect(validateEvent(event?.data) ? [] : validateEvent.errors).toEqual([]);
    const running = await t.request.post(`/v1/workflows/${workflowId}/executions/${(await send({ channel: 'voice', customer_id: 'caller-2', message: 'callback' })).body.data.executions[0].id}/retry`).set(bearer(key));
    expect(running.status).toBe(409);
    expect(running.body.error.code).toBe('EXECUTION_NOT_RETRYABLE');
    // The Temporal run of the cancelled execution is cancelled too.
    await waitFor(async () => {
      const d = await t.services.temporal.client.workflow.getHandle(retryId).describe();
      return d.status.name === 'CANCELLED' ? true : undefined;
    }, 'the Temporal run to be cancelled');
    const wf2 = await t.request.get(`/v1/workflows/${workflowId}`).set(bearer(reader));
    expect(wf2.body.data.execution_count).toBe(3);
    const otherOrgKey = (await t.createKey('admin', await t.createOrg())).key;
    const hidden = await t.request.get(`/v1/workflows/${workflowId}/executions/${executionId}`).set(bearer(otherOrgKey));
    expect(hidden.status).toBe(404);
  });
});
