/**
 * WhatsApp delivery statuses and the 24-hour customer service window, against a fake Graph
 * API and hooks signed with a real HMAC: statuses arrive out of order and twice and only
 * move forward, each change reaches the webhooks subscribed to `message.status_updated`;
 * outside the window a template is sent, and without one the step fails
 * `customer_service_window_closed` without calling Meta (as Meta's own 131047 does).
 */
import { bearer } from '../helpers/app';
import { type FakeMeta, graphError, startFakeMeta, whatsAppStatus, whatsAppText, postSignedHook } from '../helpers/fake-meta';
import { waitFor } from '../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../helpers/webhooks';
import { createActiveWorkflow } from '../executions/helpers';

const PHONE_ID = '106540352242922';
const SECRET = 'wa-app-secret';

describe('delivery statuses and the customer service window', () => {
  let kit: WebhookKit;
  let meta: FakeMeta;
  let auth: Record<string, string>;
  let channel: string;

  const hook = (body: unknown) => {
    return postSignedHook(kit.t.request, channel, body, SECRET);
  };
  const sendsTo = (waId: string) => meta.sends.filter((s) => s.status === 200 && s.body?.to === waId);
  const customerOf = async (waId: string) => (await kit.t.query<{ id: string }>('select id from customers where external_id = ?', [waId]))[0]!.id;
  const outbound = async (waId: string) =>
    ((await kit.t.request.get(`/v1/customers/${await customerOf(waId)}/messages`).set(auth)).body.data as Array<Record<string, unknown>>).filter((m) => m.direction === 'outbound');
  const fire = async (workflowId: string, waId: string) => {
    const trigger = await kit.t.request.post('/v1/triggers').set(auth).send({ name: `api ${workflowId}`, type: 'api', workflow_id: workflowId, configuration: { rate_limit: 10 } });
    expect(trigger.status).toBe(201);
    const fired = await kit.t.request.post(`/v1/triggers/${trigger.body.data.id}/fire`).set(auth).send({ customer_id: waId, message: 'reminder' });
    expect(fired.status).toBe(201);
    return fired.body.data.output.workflow_execution_id as string;
  };
  const finished = (id: string) =>
    waitFor(async () => {
      const [e] = await kit.t.query<{ status: string; customer_id: string | null }>('select status, customer_id from executions where id = ?', [id]);
      return e && e.status !== 'running' ? e : undefined;
    }, `execution ${id} to finish`);
  const stepError = async (id: string) => (await kit.t.query<{ error_type: string; error_message: string }>("select error_type, error_message from execution_steps where execution_id = ? and status = 'failed'", [id]))[0];

  beforeAll(async () => {
    meta = await startFakeMeta();
    kit = await startWebhookKit({ META_GRAPH_API_URL: meta.url });
    ({ auth } = await kit.tenant());
    channel = (await kit.t.request.post('/v1/channels').set(auth).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'tok', app_secret: SECRET } })).body.data.id;
    await createActiveWorkflow(kit.t, auth.Authorization!.replace('Bearer ', ''), {
      name: 'Shipping',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['status'] }, nodes: [{ id: 'shipped', type: 'message', content: 'Your order shipped', next: 'eta' }, { id: 'eta', type: 'message', content: 'It arrives Friday' }] },
    });
  });
  afterAll(async () => {
    await kit.close();
    await meta.close();
  });

  it('moves each message forward only, whatever the order and repetition, and tells subscribed webhooks once per change', async () => {
    const statuses = await kit.createHook(auth, '/statuses', { events: ['message.status_updated'] });
    await kit.createHook(auth, '/other', { events: ['workflow.completed'] });
    const waId = '15550200001';
    await hook(whatsAppText(PHONE_ID, waId, 'status').body).expect(200);
    // Both sent and recorded (transcript and provider id) before Meta reports on them.
    await waitFor(async () => (await outbound(waId).catch(() => [])).filter((m) => m.delivery_status === 'sent').length === 2 || undefined, 'both messages sent');
    const [shipped, eta] = sendsTo(waId).map((s) => s.id) as [string, string];

    // The first message: read arrives before delivered and sent, and read again.
    for (const s of ['read', 'delivered', 'sent', 'read'] as const) expect((await hook(whatsAppStatus(PHONE_ID, shipped, waId, s))).status).toBe(200);
    // The second: sent, then failed with Meta's error, then a late delivered.
    await hook(whatsAppStatus(PHONE_ID, eta, waId, 'sent')).expect(200);
    await hook(whatsAppStatus(PHONE_ID, eta, waId, 'failed', [{ code: 131049, title: 'This message was not delivered to maintain healthy ecosystem engagement.', message: 'Not delivered' }])).expect(200);
    await hook(whatsAppStatus(PHONE_ID, eta, waId, 'delivered')).expect(200);

    const [first, second] = await outbound(waId);
    expect(first).toMatchObject({ text: 'Your order shipped', delivery_status: 'read', error: null });
    expect(first!.delivered_at).toEqual(expect.any(String));
    expect(first!.read_at).toEqual(expect.any(String));
    expect(second).toMatchObject({ text: 'It arrives Friday', delivery_status: 'failed', delivered_at: null, read_at: null });
    expect(second!.error).toMatchObject({ code: 131049, title: expect.stringContaining('not delivered') });

    // Two changes: shipped sent → read, eta sent → failed (a message is `sent` from the moment Meta accepted it).
    const outboxed = await kit.t.query<{ n: string }>("select count(*) as n from events where type = 'message.status_updated'");
    expect(Number(outboxed[0]!.n)).toBe(2);
    const received = await kit.receiver.waitFor('/statuses', 2);
    const events = received.map((r) => JSON.parse(r.body) as { type: string; data: { provider_message_id: string; delivery_status: string } });
    expect(events.every((e) => e.type === 'message.status_updated')).toBe(true);
    expect(events.map((e) => `${e.data.provider_message_id === shipped ? 'shipped' : 'eta'}:${e.data.delivery_status}`).sort()).toEqual(['eta:failed', 'shipped:read']);
    await kit.receiver.waitFor('/other', 1);
    expect(kit.receiver.requestsTo('/other').map((r) => JSON.parse(r.body).type)).toEqual(['workflow.completed']);
  });

  it('outside the 24-hour window sends the template, and without one fails customer_service_window_closed without calling Meta', async () => {
    const key = auth.Authorization!.replace('Bearer ', '');
    const waId = '15550200002';
    await hook(whatsAppText(PHONE_ID, waId, 'hi there').body).expect(200);
    await waitFor(async () => (await kit.t.query('select 1 from customers where external_id = ?', [waId])).length === 1 || undefined, 'the customer');
    // The customer last wrote 25 hours ago.
    await kit.t.query("update channel_customer_windows set last_inbound_at = now() - interval '25 hours' where connection_id = ? and external_id = ?", [channel, waId]);

    const plain = await createActiveWorkflow(kit.t, key, { name: 'Reminder', channel: 'whatsapp', configuration: { nodes: [{ id: 'remind', type: 'message', content: 'We miss you' }] } });
    const templated = await createActiveWorkflow(kit.t, key, {
      name: 'Reminder with template',
      channel: 'whatsapp',
      configuration: {
        nodes: [{ id: 'remind', type: 'message', content: 'We miss you', template: { name: 'we_miss_you', language: 'en_US', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] } }],
      },
    });

    const closed = await fire(plain, waId);
    expect((await finished(closed)).status).toBe('failed');
    expect(await stepError(closed)).toMatchObject({ error_type: 'customer_service_window_closed' });
    expect(sendsTo(waId)).toEqual([]);

    const reopened = await fire(templated, waId);
    expect(await finished(reopened)).toMatchObject({ status: 'success', customer_id: await customerOf(waId) });
    expect(sendsTo(waId).map((s) => s.body)).toEqual([
      {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: waId,
        type: 'template',
        template: { name: 'we_miss_you', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] },
      },
    ]);
  });

  it("maps Meta's 131047 (re-engagement required) to customer_service_window_closed", async () => {
    const key = auth.Authorization!.replace('Bearer ', '');
    const waId = '15550200003';
    await hook(whatsAppText(PHONE_ID, waId, 'hello?').body).expect(200);
    await waitFor(async () => (await kit.t.query('select 1 from customers where external_id = ?', [waId])).length === 1 || undefined, 'the customer');
    const wf = await createActiveWorkflow(kit.t, key, { name: 'Nudge', channel: 'whatsapp', configuration: { nodes: [{ id: 'nudge', type: 'message', content: 'Still there?' }] } });
    meta.answerSends(graphError(400, 131047, 'Re-engagement message'));
    const id = await fire(wf, waId);
    expect((await finished(id)).status).toBe('failed');
    expect(await stepError(id)).toMatchObject({ error_type: 'customer_service_window_closed', error_message: expect.stringContaining('131047') });
  });

  it('answers GET /v1/customers/{id}/messages with null delivery fields for inbound messages', async () => {
    const messages = (await kit.t.request.get(`/v1/customers/${await customerOf('15550200001')}/messages`).set(bearer(auth.Authorization!.replace('Bearer ', '')))).body.data;
    expect(messages[0]).toMatchObject({ direction: 'inbound', delivery_status: null, delivered_at: null, read_at: null, error: null });
  });

  it("routes by the workflow's channel_connection_id when the organization has two active connections, and never through another organization's", async () => {
    const key = auth.Authorization!.replace('Bearer ', '');
    const second = (await kit.t.request.post('/v1/channels').set(auth).send({ type: 'whatsapp_cloud', name: 'WA 2', config: { phone_number_id: '2000000002', access_token: 'tok2', app_secret: 's2' } })).body.data.id;
    const waId = '15550200004';
    await hook(whatsAppText(PHONE_ID, waId, 'hi').body).expect(200);
    await waitFor(async () => (await kit.t.query('select 1 from customers where external_id = ?', [waId])).length === 1 || undefined, 'the customer');
    await kit.t.query("insert into channel_customer_windows (connection_id, external_id, last_inbound_at) values (?, ?, now())", [second, waId]);

    const ambiguous = await createActiveWorkflow(kit.t, key, { name: 'Ambiguous', channel: 'whatsapp', configuration: { nodes: [{ id: 'm', type: 'message', content: 'Which number?' }] } });
    const failed = await fire(ambiguous, waId);
    expect((await finished(failed)).status).toBe('failed');
    expect(await stepError(failed)).toMatchObject({ error_type: 'channel_not_connected', error_message: expect.stringContaining('channel_connection_id') });

    const refused = await kit.t.request.post('/v1/workflows').set(auth).send({ name: 'Wrong channel', channel: 'instagram', channel_connection_id: second });
    expect(refused.status).toBe(400);
    expect(refused.body.error.field).toBe('channel_connection_id');
    const chosen = await createActiveWorkflow(kit.t, key, { name: 'Chosen', channel: 'whatsapp', channel_connection_id: second, configuration: { nodes: [{ id: 'm', type: 'message', content: 'From the second number' }] } });
    expect((await kit.t.request.get(`/v1/workflows/${chosen}`).set(auth)).body.data.channel_connection_id).toBe(second);
    expect((await finished(await fire(chosen, waId))).status).toBe('success');
    expect(meta.sends.filter((s) => s.body?.text?.body === 'From the second number').map((s) => [s.node, s.authorization])).toEqual([['2000000002', 'Bearer tok2']]);

    // Another organization, without connections of its own, never sends through these.
    const other = await kit.tenant();
    const otherKey = other.auth.Authorization!.replace('Bearer ', '');
    const foreign = await kit.t.request.post('/v1/workflows').set(other.auth).send({ name: 'Foreign', channel: 'whatsapp', channel_connection_id: second });
    expect(foreign.status).toBe(400);
    await createActiveWorkflow(kit.t, otherKey, { name: 'Theirs', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['status'] }, nodes: [{ id: 'm', type: 'message', content: 'Not through your number' }] } });
    const msg = await kit.t.request.post('/v1/messages').set(other.auth).send({ channel: 'whatsapp', customer_id: waId, message: 'status' });
    const executionId = msg.body.data.executions[0].id as string;
    expect((await finished(executionId)).status).toBe('success');
    expect(meta.sends.filter((s) => s.body?.text?.body === 'Not through your number')).toEqual([]);
  });
});
