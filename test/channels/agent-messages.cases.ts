/**
 * Agent messages (POST /v1/customers/{id}/messages): a person's message reaches the customer
 * through the organization's WhatsApp connection (a fake Graph API) or, for an organization
 * without connections, the development adapter (CHANNEL_PROVIDER_URL, a fake provider); it is
 * in the transcript with sender `agent` and its delivery status. A closed 24-hour window
 * refuses it before anything is recorded or sent.
 */
import { createActivities } from '../../temporal/activities';
import { reconcileOnce } from '../../src/reconciler';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../helpers/channel-provider';
import { type FakeMeta, graphError, startFakeMeta, whatsAppStatus, whatsAppText, postSignedHook } from '../helpers/fake-meta';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';

const PHONE_ID = '106540352242944';
const SECRET = 'wa-agent-secret';

describe('agent messages', () => {
  let t: TestApp;
  let meta: FakeMeta;
  let provider: ChannelProvider;
  let worker: TestWorker;
  let admin: string;
  let wa: string;

  const hook = (body: unknown) => {
    return postSignedHook(t.request, wa, body, SECRET);
  };
  const customerOf = async (externalId: string) => (await t.query<{ id: string }>('select id from customers where external_id = ?', [externalId]))[0]!.id;
  const transcript = async (key: string, customerId: string) => (await t.request.get(`/v1/customers/${customerId}/messages`).set(bearer(key))).body.data as Array<Record<string, any>>;
  const agentMessage = (key: string, customerId: string, body: object) => t.request.post(`/v1/customers/${customerId}/messages`).set(bearer(key)).send(body);
  /** The agent message once its send ended (sent or failed). */
  const ended = (key: string, customerId: string, id: string) =>
    waitFor(async () => {
      const m = (await transcript(key, customerId)).find((x) => x.id === id);
      return m && m.delivery_status !== 'pending' ? m : undefined;
    }, `agent message ${id} to be sent`);

  beforeAll(async () => {
    meta = await startFakeMeta();
    provider = await startChannelProvider();
    t = await createTestApp({ META_GRAPH_API_URL: meta.url, CHANNEL_PROVIDER_URL: provider.url, CHANNEL_PROVIDER_TIMEOUT_MS: '1000' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    admin = (await t.createKey('admin')).key;
    wa = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'EAAG-agent', app_secret: SECRET } }))
      .body.data.id;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await provider.close();
    await meta.close();
  });

  it('sends through the WhatsApp connection inside the window, once per Idempotency-Key, and shows it in the transcript with sender agent', async () => {
    const waId = '15550400001';
    await hook(whatsAppText(PHONE_ID, waId, 'I need help with my order').body).expect(200);
    const customer = await customerOf(waId);

    const first = await agentMessage(admin, customer, { text: 'Hi, this is Maria from support.' }).set('Idempotency-Key', 'agent-msg-1');
    expect(first.status).toBe(202);
    expect(first.body.data).toMatchObject({ customer_id: customer, channel: 'whatsapp', direction: 'outbound', sender: 'agent', text: 'Hi, this is Maria from support.', execution_id: null });
    const again = await agentMessage(admin, customer, { text: 'Hi, this is Maria from support.' }).set('Idempotency-Key', 'agent-msg-1');
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);

    const sent = await ended(admin, customer, first.body.data.id);
    expect(sent.delivery_status).toBe('sent');
    const sends = meta.sends.filter((s) => s.body?.to === waId);
    expect(sends).toHaveLength(1);
    expect(sends[0]).toMatchObject({
      node: PHONE_ID,
      authorization: 'Bearer EAAG-agent',
      body: { messaging_product: 'whatsapp', recipient_type: 'individual', to: waId, type: 'text', text: { body: 'Hi, this is Maria from support.' } },
    });
    // Meta's statuses reach it like any outbound message.
    await hook(whatsAppStatus(PHONE_ID, sends[0]!.id, waId, 'read')).expect(200);
    const messages = await transcript(admin, customer);
    expect(messages.map((m) => [m.sender, m.direction, m.text, m.delivery_status])).toEqual([
      ['customer', 'inbound', 'I need help with my order', null],
      ['agent', 'outbound', 'Hi, this is Maria from support.', 'read'],
    ]);
    const [row] = await t.query<{ message_count: number }>('select message_count from customers where id = ?', [customer]);
    expect(row!.message_count).toBe(2);
  });

  it('refuses with 422 WINDOW_CLOSED when the customer never wrote on the connection, recording and sending nothing', async () => {
    const waId = '15550400002';
    // Known through POST /v1/messages (our own API), never through the WhatsApp connection.
    await t.request.post('/v1/messages').set(bearer(admin)).send({ channel: 'whatsapp', customer_id: waId, message: 'hello' }).expect(201);
    const customer = await customerOf(waId);
    const res = await agentMessage(admin, customer, { text: 'Are you there?' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('WINDOW_CLOSED');
    expect(res.body.error.message).toMatch(/never wrote/);
    expect((await transcript(admin, customer)).filter((m) => m.direction === 'outbound')).toEqual([]);
    expect(meta.sends.filter((s) => s.body?.to === waId)).toEqual([]);
  });

  it('a customer handed to a person opens the window with the message they write during the handoff: the reply goes out', async () => {
    const waId = '15550400009';
    // Known through our own API only (no window on the connection), then handed to a person.
    await t.request.post('/v1/messages').set(bearer(admin)).send({ channel: 'whatsapp', customer_id: waId, message: 'hello' }).expect(201);
    const customer = await customerOf(waId);
    await t.request.post(`/v1/customers/${customer}/handoff`).set(bearer(admin)).send({ reason: 'A person answers' }).expect(201);
    await hook(whatsAppText(PHONE_ID, waId, 'Is anyone there?').body).expect(200);
    const res = await agentMessage(admin, customer, { text: 'Yes, Maria here.' });
    expect(res.status).toBe(202);
    expect(await ended(admin, customer, res.body.data.id)).toMatchObject({ sender: 'agent', delivery_status: 'sent' });
    expect(meta.sends.filter((s) => s.body?.to === waId)).toHaveLength(1);
  });

  it("ends failed with Meta's refusal, visible in the transcript", async () => {
    const waId = '15550400003';
    await hook(whatsAppText(PHONE_ID, waId, 'hello').body).expect(200);
    const customer = await customerOf(waId);
    meta.answerSends(graphError(400, 131026, 'Message undeliverable'));
    const res = await agentMessage(admin, customer, { text: 'Your refund is on its way.' });
    expect(res.status).toBe(202);
    const failed = await ended(admin, customer, res.body.data.id);
    expect(failed).toMatchObject({ sender: 'agent', delivery_status: 'failed', error: { code: null, title: 'channel_undeliverable' } });
    expect(failed.error.message).toMatch(/Message undeliverable/);
  });

  it('goes through the development adapter for an organization without connections, and a committed message whose start was lost is sent by the reconciler', async () => {
    const other = (await t.createKey('admin', await t.createOrg())).key;
    await t.request.post('/v1/messages').set(bearer(other)).send({ channel: 'instagram', customer_id: 'ig-agent-1', message: 'hi' }).expect(201);
    const [{ id: customer }] = (await t.query<{ id: string }>("select id from customers where external_id = 'ig-agent-1'")) as [{ id: string }];
    const res = await agentMessage(other, customer, { text: 'Welcome back!', channel: 'instagram' });
    expect(res.status).toBe(202);
    await ended(other, customer, res.body.data.id);
    const arrived = await waitFor(async () => provider.received.find((m) => m.text === 'Welcome back!'), 'the adapter to receive it');
    expect(arrived.message).toMatchObject({ channel: 'instagram', to: 'ig-agent-1', customer_id: customer, execution_id: null, node_id: null });
    expect(arrived.idempotencyKey).toBe(`agent:${res.body.data.id}`);

    // A process that died between the commit and the start: the row is committed, unstamped.
    await t.query(
      `insert into messages (id, organization_id, customer_id, channel, direction, sender, text, metadata, dedupe_key, created_at)
       select 'msg_agentcrash01', organization_id, id, channel, 'outbound', 'agent', 'Sent after a crash', '{}', 'agent:msg_agentcrash01', now() - interval '1 minute'
         from customers where id = ?`,
      [customer],
    );
    expect((await reconcileOnce(t.services, 0)).jobs).toBeGreaterThanOrEqual(1);
    await ended(other, customer, 'msg_agentcrash01');
    expect(provider.received.filter((m) => m.text === 'Sent after a crash')).toHaveLength(1);
  });

  it('answers 404 for another organization’s customer and 400 for a bad body, changing nothing', async () => {
    const waId = '15550400004';
    await hook(whatsAppText(PHONE_ID, waId, 'hello').body).expect(200);
    const customer = await customerOf(waId);
    const stranger = (await t.createKey('admin', await t.createOrg())).key;
    const cross = await agentMessage(stranger, customer, { text: 'hi' });
    expect(cross.status).toBe(404);
    expect(cross.body.error.code).toBe('CUSTOMER_NOT_FOUND');
    for (const body of [{}, { text: '' }, { text: '   ' }, { text: 'x'.repeat(4097) }, { text: 'hi', extra: 1 }, { text: 'hi', channel: 'fax' }]) {
      const res = await agentMessage(admin, customer, body);
      expect([res.status, res.body.error?.code]).toEqual([400, expect.any(String)]);
    }
    const mismatch = await agentMessage(admin, customer, { text: 'hi', channel: 'instagram' });
    expect([mismatch.status, mismatch.body.error.code, mismatch.body.error.field]).toEqual([422, 'CHANNEL_MISMATCH', 'channel']);
    expect((await transcript(admin, customer)).filter((m) => m.direction === 'outbound')).toEqual([]);
    expect(meta.sends.filter((s) => s.body?.to === waId)).toEqual([]);
  });
});
