/**
 * Human handoff (docs/handoff.md) against the real API (two processes on one database), worker, Temporal and an HTTPS webhook
 * receiver: a handed-off customer's messages are recorded and start or resume nothing, their
 * waiting form closes (`handed_off`), the handoff ends by DELETE or by its Temporal timer, the
 * events reach a subscribed webhook, and an ai_response node with `fallback: "handoff"` hands
 * the customer off by itself (the model server is a real fake HTTP server).
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type FakeHttpServer, startFakeHttpServer } from '../../helpers/fake-http-server';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

const HANDOFF_EVENTS = ['conversation.handoff_started', 'conversation.handoff_ended', 'message.received'];

describe('human handoff', () => {
  let kit: WebhookKit;
  let model: FakeHttpServer;
  /** A second API process on the same database and task queue: a handoff started through one holds on the other. */
  let otherApi: TestApp;

  beforeAll(async () => {
    model = await startFakeHttpServer();
    model.setDefault(() => ({ status: 200, body: { choices: [{ message: { role: 'assistant', content: 'Rewritten' } }] } }));
    kit = await startWebhookKit({ AI_MODEL_URL: `${model.url}/v1`, AI_MODEL_NAME: 'test-model' });
    otherApi = await createTestApp({ DATABASE_URL: kit.t.databaseUrl, TEMPORAL_TASK_QUEUE: kit.t.config.TEMPORAL_TASK_QUEUE });
  });
  afterAll(async () => {
    await otherApi.close();
    await kit.close();
    await model.close();
  });

  const send = (auth: Record<string, string>, customer: string, message: string, app: TestApp = kit.t) =>
    app.request.post('/v1/messages').set(auth).send({ channel: 'whatsapp', customer_id: customer, message });

  /** A keyword workflow that greets, then waits on a form for the customer's email. */
  async function intakeWorkflow(auth: Record<string, string>) {
    const created = await kit.t.request
      .post('/v1/workflows')
      .set(auth)
      .send({
        name: 'Intake',
        channel: 'whatsapp',
        configuration: {
          trigger: { type: 'keyword', keywords: ['hello'] },
          nodes: [
            { id: 'hi', type: 'message', content: 'Hi!', next: 'ask' },
            { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }] },
          ],
        },
      });
    expect(created.status).toBe(201);
    expect((await kit.t.request.post(`/v1/workflows/${created.body.data.id}/activate`).set(auth)).status).toBe(200);
    return created.body.data.id as string;
  }

  const eventsOf = (path: string) => kit.receiver.requestsTo(path).map((r) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> });

  it('silences the customer (messages recorded, nothing started or resumed, the waiting form closed) until `until` passes', async () => {
    const { auth } = await kit.tenant();
    const key = auth.Authorization!.replace(/^Bearer /, '');
    const hook = await kit.createHook(auth, '/silence', { events: HANDOFF_EVENTS });
    expect(hook.active).toBe(true);
    const workflowId = await intakeWorkflow(auth);

    const first = await send(auth, '+15550001', 'hello');
    expect(first.body.data.status).toBe('started');
    const customerId = first.body.data.customer_id as string;
    const waitingId = first.body.data.executions[0].id as string;
    await waitForExecution(kit.t, key, workflowId, waitingId, (d) => d.output?.next_action === 'wait_for_input');

    const until = new Date(Date.now() + 3_600_000).toISOString();
    const started = await kit.t.request.post(`/v1/customers/${customerId}/handoff`).set(auth).send({ reason: 'billing dispute', until });
    expect(started.status).toBe(201);
    expect(started.body.data).toEqual({ since: expect.any(String), until, reason: 'billing dispute' });

    // The waiting form closed: cancelled, with the outcome handed_off.
    const closed = await waitForExecution(kit.t, key, workflowId, waitingId, 'cancelled');
    expect(closed.output).toMatchObject({ next_action: 'handed_off', closed_reason: 'handed_off' });
    const customer = await kit.t.request.get(`/v1/customers/${customerId}`).set(auth);
    expect(customer.body.data.handoff).toEqual({ since: started.body.data.since, until, reason: 'billing dispute' });
    const listed = await kit.t.request.get('/v1/customers').set(auth);
    expect(listed.body.data.map((c: { id: string; handoff: unknown }) => [c.id, c.handoff])).toEqual([[customerId, customer.body.data.handoff]]);

    // A reply and a new "hello", through the other API process: recorded, neither resumes nor starts anything.
    const during = await send(auth, '+15550001', 'hello', otherApi);
    expect(during.status).toBe(201);
    expect(during.body.data).toEqual({ message_id: expect.any(String), customer_id: customerId, status: 'ignored', reason: 'handed_off', executions: [] });
    const transcript = await kit.t.request.get(`/v1/customers/${customerId}/messages?limit=100`).set(auth);
    expect(transcript.body.data.filter((m: { direction: string }) => m.direction === 'inbound').map((m: { id: string }) => m.id)).toContain(during.body.data.message_id);
    expect(await kit.t.query('select id from executions where customer_id = ?', [customerId])).toHaveLength(1);

    // The webhook got the handoff's start and the silenced message.
    await waitFor(async () => eventsOf('/silence').some((e) => e.type === 'message.received' && e.data.message_id === during.body.data.message_id), 'message.received');
    const startedEvent = eventsOf('/silence').find((e) => e.type === 'conversation.handoff_started')!;
    expect(startedEvent.data).toMatchObject({ customer_id: customerId, external_id: '+15550001', channel: 'whatsapp', reason: 'billing dispute', until, execution_id: null });

    // Moved to 2 s from now (200), the Temporal timer ends it when `until` passes (2 s: the timer is what is tested).
    const soon = await kit.t.request.post(`/v1/customers/${customerId}/handoff`).set(auth).send({ until: new Date(Date.now() + 2_000).toISOString() });
    expect(soon.status).toBe(200);
    await waitFor(async () => eventsOf('/silence').find((e) => e.type === 'conversation.handoff_ended'), 'conversation.handoff_ended', 20_000);
    const ended = eventsOf('/silence').find((e) => e.type === 'conversation.handoff_ended')!;
    expect(ended.data).toMatchObject({ handoff_id: startedEvent.data.handoff_id, end_reason: 'expired' });
    expect((await kit.t.request.get(`/v1/customers/${customerId}`).set(auth)).body.data.handoff).toBeNull();

    const after = await send(auth, '+15550001', 'hello', otherApi);
    expect(after.body.data.status).toBe('started');
    expect(after.body.data.executions).toHaveLength(1);
  });

  it('DELETE ends a handoff at once; a second POST moves it (200); the ended one is 404', async () => {
    const { auth } = await kit.tenant();
    const hook = await kit.createHook(auth, '/delete', { events: HANDOFF_EVENTS });
    expect(hook.active).toBe(true);
    await intakeWorkflow(auth);
    const first = await send(auth, '+15550002', 'a question');
    expect(first.body.data.status).toBe('no_match');
    const customerId = first.body.data.customer_id as string;

    const started = await kit.t.request.post(`/v1/customers/${customerId}/handoff`).set(auth).send({ channel: 'whatsapp' });
    expect(started.status).toBe(201);
    // Without `until`: a day.
    expect(Date.parse(started.body.data.until) - Date.parse(started.body.data.since)).toBeGreaterThan(23 * 3600_000);
    expect(started.body.data.reason).toBeNull();
    const later = new Date(Date.now() + 2 * 24 * 3600_000).toISOString();
    const moved = await kit.t.request.post(`/v1/customers/${customerId}/handoff`).set(auth).send({ until: later, reason: 'escalated' });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toEqual({ since: started.body.data.since, until: later, reason: 'escalated' });
    expect((await send(auth, '+15550002', 'hello')).body.data.status).toBe('ignored');

    const del = await kit.t.request.delete(`/v1/customers/${customerId}/handoff`).set(auth);
    expect(del.status).toBe(200);
    expect((await kit.t.request.get(`/v1/customers/${customerId}`).set(auth)).body.data.handoff).toBeNull();
    const again = await kit.t.request.delete(`/v1/customers/${customerId}/handoff`).set(auth);
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('HANDOFF_NOT_FOUND');
    expect((await send(auth, '+15550002', 'hello')).body.data.status).toBe('started');

    // One delivery each (deliveries are independent: their order is not the events' order); moving `until` emits nothing.
    const handoffTypes = () => eventsOf('/delete').map((e) => e.type).filter((t) => t !== 'message.received').sort();
    await waitFor(async () => handoffTypes().length === 2, 'both handoff events');
    expect(handoffTypes()).toEqual(['conversation.handoff_ended', 'conversation.handoff_started']);
    expect(eventsOf('/delete').find((e) => e.type === 'conversation.handoff_ended')!.data).toMatchObject({ end_reason: 'deleted', reason: 'escalated', until: later });
    // The catalog's schemas (GET /v1/webhooks/event-types) validate the deliveries.
    const catalog = (await kit.t.request.get('/v1/webhooks/event-types').set(auth)).body.data as Array<{ type: string; data_schema: object }>;
    const ajv = new Ajv2020({ allErrors: true });
    addFormats(ajv);
    for (const e of eventsOf('/delete').filter((d) => d.type.startsWith('conversation.'))) {
      const validate = ajv.compile(catalog.find((c) => c.type === e.type)!.data_schema);
      expect({ type: e.type, valid: validate(e.data), errors: validate.errors ?? null }).toEqual({ type: e.type, valid: true, errors: null });
    }
  });

  it('an ai_response node with fallback "handoff" hands the customer off below its threshold and ends with the outcome handed_off', async () => {
    const { auth } = await kit.tenant();
    const key = auth.Authorization!.replace(/^Bearer /, '');
    const kb = await kit.t.request.post('/v1/knowledge-bases').set(auth).send({ name: 'Help', description: 'FAQ' });
    await kit.t.request
      .post(`/v1/knowledge-bases/${kb.body.data.id}/articles`)
      .set(auth)
      .send({ title: 'Reset your password', content: 'Open Settings, choose Security and press Reset password.' });
    const workflowId = await createActiveWorkflow(kit.t, key, {
      name: 'Support bot',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['weather', 'password'] },
        nodes: [
          { id: 'answer', type: 'ai_response', knowledge_base: kb.body.data.id, confidence_threshold: 0.6, fallback: 'handoff', next: 'bye' },
          { id: 'bye', type: 'message', content: 'Anything else?' },
        ],
      },
    });
    const calls = model.arrived.length;
    const res = await send(auth, '+15550003', 'What is the weather like?');
    const customerId = res.body.data.customer_id as string;
    const done = await waitForExecution(kit.t, key, workflowId, res.body.data.executions[0].id, 'cancelled');
    expect(done.output).toMatchObject({ next_action: 'handed_off' });
    expect(done.steps).toEqual([expect.objectContaining({ node_id: 'answer', status: 'completed', output: expect.objectContaining({ handed_off: true, fallback_used: true }) })]);
    expect(model.arrived.length).toBe(calls);
    // Nothing was sent to the customer.
    const transcript = await kit.t.request.get(`/v1/customers/${customerId}/messages`).set(auth);
    expect(transcript.body.data.map((m: { direction: string }) => m.direction)).toEqual(['inbound']);

    const customer = await kit.t.request.get(`/v1/customers/${customerId}`).set(auth);
    expect(customer.body.data.handoff).toMatchObject({ reason: 'low_confidence' });
    expect((await send(auth, '+15550003', 'how do I reset my password')).body.data).toMatchObject({ status: 'ignored', reason: 'handed_off' });

    // Analytics: the handed-off customer counts in handoff_rate and as a journey drop-off.
    const engagement = await kit.t.request.get('/v1/analytics/customers/engagement').set(auth);
    expect(engagement.status).toBe(200);
    expect(engagement.body.data.engagement.handoff_rate).toBe(1);
    const journey = await kit.t.request.get('/v1/analytics/customers/journey').set(auth);
    expect(journey.status).toBe(200);
    const reasons = journey.body.data.journey.drop_off_points.flatMap((d: { common_reasons: string[] }) => d.common_reasons);
    expect(reasons).toContain('handed_off');
  });

  it('answers 404 across organizations and 400 for bad input, changing nothing', async () => {
    const { auth } = await kit.tenant();
    const other = await kit.tenant();
    const first = await send(auth, '+15550004', 'hi');
    const customerId = first.body.data.customer_id as string;
    const path = `/v1/customers/${customerId}/handoff`;

    for (const res of [
      await kit.t.request.post(path).set(other.auth).send({}),
      await kit.t.request.delete(path).set(other.auth),
      await kit.t.request.get(`/v1/customers/${customerId}`).set(other.auth),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('CUSTOMER_NOT_FOUND');
    }
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ until: new Date(Date.now() - 60_000).toISOString() }, 'until'],
      [{ until: new Date(Date.now() + 8 * 24 * 3600_000).toISOString() }, 'until'],
      [{ until: 'tomorrow' }, 'until'],
      [{ channel: 'instagram' }, 'channel'],
      [{ channel: 'pigeon' }, 'channel'],
      [{ reason: '' }, 'reason'],
      [{ surprise: true }, 'surprise'],
    ];
    for (const [body, field] of bad) {
      const res = await kit.t.request.post(path).set(auth).send(body);
      expect({ body, status: res.status, field: res.body.error?.field }).toEqual({ body, status: 400, field });
    }
    expect(await kit.t.query('select id from customer_handoffs where customer_id = ?', [customerId])).toHaveLength(0);
    const reader = (await kit.t.createKey('read', (await kit.t.query<{ organization_id: string }>('select organization_id from customers where id = ?', [customerId]))[0]!.organization_id)).key;
    const denied = await kit.t.request.post(path).set(bearer(reader)).send({});
    expect(denied.status).toBe(403);
  });
});
