/**
 * Twilio Messaging (`twilio_messaging`) end to end: SMS and WhatsApp-through-Twilio
 * connections, Twilio's documented form parameters signed with the twilio package's own
 * signature function, a real worker, and sends through a fake Twilio REST API (a real HTTP
 * server at TWILIO_API_URL that checks every request against Twilio's published OpenAPI).
 */
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { newAccountSid, postTwilioForm, startFakeTwilioApi, twilioIncomingMessage, twilioStatusCallback } from '../helpers/fake-twilio';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow } from '../executions/helpers';

const SMS_NUMBER = '+14155550100';
const WHATSAPP_NUMBER = '+14155550199';
const MESSAGING_SERVICE = `MG${'a'.repeat(32)}`;

describe('Twilio Messaging', () => {
  let t: TestApp;
  let twilio: Awaited<ReturnType<typeof startFakeTwilioApi>>;
  let worker: TestWorker;
  let admin: string;
  const accountSid = newAccountSid();
  const authToken = 'twilio-auth-token';
  let sms: { id: string; webhook_url: string };
  let whatsapp: { id: string; webhook_url: string };

  const connect = async (key: string, name: string, config: Record<string, string>) => {
    const res = await t.request.post('/v1/channels').set(bearer(key)).send({ type: 'twilio_messaging', name, config });
    expect(res.status).toBe(201);
    return res.body.data;
  };
  const smsFrom = (from: string, body: string, token = authToken) =>
    postTwilioForm(t, sms.webhook_url, twilioIncomingMessage({ accountSid, from, to: SMS_NUMBER, body }), token);
  const sendsTo = (to: string) => twilio.messages.filter((m) => m.params.To === to);
  const textsTo = (to: string) => sendsTo(to).map((m) => m.params.Body);
  const counts = async () =>
    (await t.query<{ n: string }>("select (select count(*) from messages) || '/' || (select count(*) from customers) || '/' || (select count(*) from executions) as n"))[0]!.n;
  const finished = (externalId: string, channel: string) =>
    waitFor(async () => {
      const [e] = await t.query<{ id: string; status: string }>('select e.id, e.status from executions e join customers c on c.id = e.customer_id where c.external_id = ? and c.channel = ?', [
        externalId,
        channel,
      ]);
      return e && e.status !== 'running' ? e : undefined;
    }, 'the execution to finish');

  beforeAll(async () => {
    twilio = await startFakeTwilioApi();
    t = await createTestApp({ TWILIO_API_URL: twilio.url, CHANNEL_PROVIDER_TIMEOUT_MS: '2000' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    admin = (await t.createKey('admin')).key;
    sms = await connect(admin, 'Shop SMS', { account_sid: accountSid, auth_token: authToken, channel: 'sms', phone_number: SMS_NUMBER });
    whatsapp = await connect(admin, 'Shop WhatsApp', { account_sid: accountSid, auth_token: authToken, channel: 'whatsapp', phone_number: WHATSAPP_NUMBER, messaging_service_sid: MESSAGING_SERVICE });
    await createActiveWorkflow(t, admin, {
      name: 'Orders by SMS',
      channel: 'sms',
      configuration: {
        trigger: { type: 'keyword', keywords: ['order'] },
        nodes: [
          { id: 'welcome', type: 'message', content: 'Welcome to the shop!', next: 'ask' },
          { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'rate' },
          { id: 'rate', type: 'form', fields: [{ name: 'stars', type: 'rating', required: true, label: 'How was it?' }], next: 'bye' },
          { id: 'bye', type: 'message', content: 'Thanks, we will write to you.' },
        ],
      },
    });
    await createActiveWorkflow(t, admin, {
      name: 'Hola on WhatsApp',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['hola'] }, nodes: [{ id: 'hi', type: 'message', content: '¡Hola! ¿En qué te ayudamos?' }] },
    });
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await twilio.close();
  });

  it('connects: webhook_url, the Auth Token write-only, /test reading the account with basic auth; a sender and a known channel are required', async () => {
    expect(sms).toMatchObject({
      type: 'twilio_messaging',
      channel: 'sms',
      status: 'active',
      config: { account_sid: accountSid, channel: 'sms', phone_number: SMS_NUMBER },
      webhook_url: `${t.baseUrl}/hooks/channels/${sms.id}`,
    });
    expect(whatsapp).toMatchObject({ channel: 'whatsapp', config: { messaging_service_sid: MESSAGING_SERVICE } });
    expect(JSON.stringify([sms, whatsapp])).not.toContain(authToken);
    const tested = await t.request.post(`/v1/channels/${sms.id}/test`).set(bearer(admin));
    expect(tested.body.data).toEqual({ ok: true, status_code: 200, error_message: null });
    const read = twilio.arrived.at(-1)!;
    expect(read.path).toBe(`/2010-04-01/Accounts/${accountSid}.json`);
    expect(read.headers.authorization).toBe(`Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`);

    const noSender = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'twilio_messaging', name: 'No sender', config: { account_sid: accountSid, auth_token: 'x', channel: 'sms' } });
    expect(noSender.status).toBe(400);
    // `channel` is a field of http connections too: a Twilio connection takes sms or whatsapp only.
    const other = await t.request.put(`/v1/channels/${sms.id}`).set(bearer(admin)).send({ config: { channel: 'instagram' } });
    expect(other.status).toBe(400);
    expect(other.body.error.field).toBe('config.channel');
    expect((await t.request.get(`/v1/channels/${sms.id}`).set(bearer(admin))).body.data.channel).toBe('sms');
  });

  it('SMS: a keyword starts the workflow, the forms are answered by SMS, every send goes through Messages.json with the hook as StatusCallback', async () => {
    const customer = '+14155550123';
    const first = await smsFrom(customer, 'order').expect(200);
    // Twilio reads the answer as TwiML: nothing to say now.
    expect(first.headers['content-type']).toMatch(/^text\/xml/);
    expect(first.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');
    await waitFor(async () => textsTo(customer).length >= 2 || undefined, 'welcome and the form prompt');
    expect(sendsTo(customer)[0]).toMatchObject({
      accountSid,
      params: { To: customer, From: SMS_NUMBER, Body: 'Welcome to the shop!', StatusCallback: sms.webhook_url },
      authorization: `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`,
    });
    await smsFrom(customer, 'ana@example.com').expect(200);
    // A rating is a question with choices: on SMS, its text lists them.
    await waitFor(async () => textsTo(customer).length >= 3 || undefined, 'the rating question');
    expect(textsTo(customer)[2]).toBe('How was it?\nReply 1, 2, 3, 4 or 5');
    await smsFrom(customer, '5').expect(200);
    const execution = await finished(customer, 'sms');
    expect(execution.status).toBe('success');
    expect(textsTo(customer)).toEqual(['Welcome to the shop!', 'Your email?', 'How was it?\nReply 1, 2, 3, 4 or 5', 'Thanks, we will write to you.']);
    const steps = await t.query<{ node_id: string; output: Record<string, unknown> }>("select node_id, output from execution_steps where execution_id = ? and node_id in ('ask', 'rate') order by node_id", [execution.id]);
    expect(steps.map((s) => s.output)).toEqual([expect.objectContaining({ form_data: { email: 'ana@example.com' } }), expect.objectContaining({ form_data: { stars: '5' } })]);
    const [message] = await t.query<{ metadata: Record<string, unknown> }>("select m.metadata from messages m join customers c on c.id = m.customer_id where c.external_id = ? and m.text = 'order'", [customer]);
    expect(message!.metadata).toMatchObject({ channel_connection_id: sms.id, type: 'text' });
  });

  it("status callbacks move the sends forward and show in the customer's messages; statuses before sent are ignored", async () => {
    const customer = '+14155550124';
    await smsFrom(customer, 'order').expect(200);
    await waitFor(async () => textsTo(customer).length >= 2 || undefined, 'welcome and the form prompt');
    const [welcome, prompt] = sendsTo(customer).map((m) => m.sid) as [string, string];
    const callback = (messageSid: string, status: string, errorCode?: string) =>
      postTwilioForm(t, sms.webhook_url, twilioStatusCallback({ accountSid, messageSid, status, from: SMS_NUMBER, to: customer, ...(errorCode ? { errorCode } : {}) }), authToken);
    expect((await callback(welcome, 'queued').expect(200)).text).toContain('<Response/>');
    for (const status of ['sent', 'delivered', 'sent']) await callback(welcome, status).expect(200);
    await callback(prompt, 'undelivered', '30003').expect(200);
    const customerId = (await t.query<{ id: string }>("select id from customers where external_id = ? and channel = 'sms'", [customer]))[0]!.id;
    const outbound = ((await t.request.get(`/v1/customers/${customerId}/messages`).set(bearer(admin))).body.data as Array<Record<string, unknown>>).filter((m) => m.direction === 'outbound');
    expect(outbound[0]).toMatchObject({ text: 'Welcome to the shop!', delivery_status: 'delivered', error: null });
    expect(outbound[0]!.delivered_at).toEqual(expect.any(String));
    expect(outbound[1]).toMatchObject({ text: 'Your email?', delivery_status: 'failed', error: { code: 30003, title: 'Twilio: undelivered' } });
  });

  it("Twilio's refusals mean what they say: 21610 (the recipient replied STOP) fails the step channel_undeliverable, without retrying", async () => {
    const customer = '+14155550127';
    const toCustomer = (r: { path: string; raw: string }) => r.path.endsWith('/Messages.json') && new URLSearchParams(r.raw).get('To') === customer;
    twilio.script(toCustomer, { status: 400, body: { code: 21610, message: 'Attempt to send to unsubscribed recipient', more_info: 'https://www.twilio.com/docs/errors/21610', status: 400 } });
    await smsFrom(customer, 'order').expect(200);
    const execution = await finished(customer, 'sms');
    expect(execution.status).toBe('failed');
    const [step] = await t.query<{ error_type: string; error_message: string }>("select error_type, error_message from execution_steps where execution_id = ? and status = 'failed'", [execution.id]);
    expect(step).toEqual({ error_type: 'channel_undeliverable', error_message: expect.stringContaining('21610') });
    expect(twilio.arrived.filter(toCustomer)).toHaveLength(1);
  });

  it('refuses a request not signed with the Auth Token (403) and records nothing; a JSON body is not Twilio’s (415)', async () => {
    const before = await counts();
    const forged = await smsFrom('+14155550125', 'order', 'not-the-auth-token');
    expect(forged.status).toBe(403);
    expect(forged.body.error.code).toBe('INVALID_SIGNATURE');
    const unsigned = await t.request.post(`/hooks/channels/${sms.id}`).type('form').send(twilioIncomingMessage({ accountSid, from: '+14155550125', to: SMS_NUMBER, body: 'order' }));
    expect(unsigned.status).toBe(403);
    const json = await t.request.post(`/hooks/channels/${sms.id}`).send({ Body: 'order' });
    expect(json.status).toBe(415);
    expect(await counts()).toBe(before);
    expect(textsTo('+14155550125')).toEqual([]);
  });

  it("another organization's connection never serves this one: its token signs nothing here, its messages stay its own", async () => {
    const other = await t.createKey('admin', await t.createOrg());
    expect((await t.request.get(`/v1/channels/${sms.id}`).set(bearer(other.key))).status).toBe(404);
    const theirAccount = newAccountSid();
    const theirs = await connect(other.key, 'Their SMS', { account_sid: theirAccount, auth_token: 'their-token', channel: 'sms', phone_number: '+14155550177' });
    const before = await counts();
    expect((await smsFrom('+14155550126', 'order', 'their-token')).status).toBe(403);
    expect(await counts()).toBe(before);
    // A message signed for our hook but for their account or their number is not ours: acknowledged, ignored.
    const misrouted = await postTwilioForm(t, sms.webhook_url, twilioIncomingMessage({ accountSid: theirAccount, from: '+14155550126', to: '+14155550177', body: 'order' }), authToken);
    expect(misrouted.status).toBe(200);
    expect(await counts()).toBe(before);
    // Their own message, on their hook, is theirs.
    await postTwilioForm(t, theirs.webhook_url, twilioIncomingMessage({ accountSid: theirAccount, from: '+14155550126', to: '+14155550177', body: 'order' }), 'their-token').expect(200);
    const owners = await t.query<{ organization_id: string }>("select organization_id from customers where external_id = '+14155550126'");
    expect(owners).toEqual([{ organization_id: other.organizationId }]);
    const list = await t.request.get('/v1/channels?type=twilio_messaging').set(bearer(other.key));
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([theirs.id]);
    // Their organization has no workflow: nothing is sent, with either account.
    expect(twilio.messages.filter((m) => m.params.To === '+14155550126')).toEqual([]);
  });

  it('WhatsApp through Twilio: whatsapp: addresses, the customer by wa_id and profile name, the reply from the WhatsApp sender', async () => {
    const from = 'whatsapp:+34600000001';
    const params = twilioIncomingMessage({ accountSid, from, to: `whatsapp:${WHATSAPP_NUMBER}`, body: 'Hola', messagingServiceSid: MESSAGING_SERVICE, whatsapp: { profileName: 'Lucía' } });
    await postTwilioForm(t, whatsapp.webhook_url, params, authToken).expect(200);
    await waitFor(async () => sendsTo(from)[0], 'the WhatsApp reply');
    expect(sendsTo(from)[0]!.params).toEqual({
      To: from,
      Body: '¡Hola! ¿En qué te ayudamos?',
      StatusCallback: whatsapp.webhook_url,
      From: `whatsapp:${WHATSAPP_NUMBER}`,
      MessagingServiceSid: MESSAGING_SERVICE,
    });
    const [customer] = await t.query<{ external_id: string; channel: string; name: string }>("select external_id, channel, name from customers where external_id = '34600000001'");
    expect(customer).toEqual({ external_id: '34600000001', channel: 'whatsapp', name: 'Lucía' });
    // A redelivery of the same MessageSid changes nothing.
    const again = await postTwilioForm(t, whatsapp.webhook_url, params, authToken).expect(200);
    expect(again.text).toContain('<Response/>');
    expect((await t.query("select 1 from messages m join customers c on c.id = m.customer_id where c.external_id = '34600000001' and m.direction = 'inbound'")).length).toBe(1);
  });
});
