/**
 * Phone calls through a twilio_voice connection, end to end: Twilio's requests are
 * form-encoded and signed with the twilio package's own signature function, the TwiML
 * answers are parsed, and a real worker runs the same execution workflow as every channel
 * (its turns are Temporal updates). The caller follows `<Pause/><Redirect>` answers as Twilio
 * does, so a slow machine changes how many requests a turn takes, never what is said.
 */
import { createActivities } from '../../temporal/activities';
import { executionWorkflowId } from '../../temporal/executions.shared';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import type { FakeHttpServer } from '../helpers/fake-http-server';
import { FakeCall, newAccountSid, spoken, startFakeTwilioApi } from '../helpers/fake-twilio';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow } from '../executions/helpers';

jest.setTimeout(120_000);

describe('voice calls', () => {
  let t: TestApp;
  let twilioApi: FakeHttpServer;
  let worker: TestWorker;
  let admin: string;
  let numbers = 0;

  /** A connection with its own number and token, and an active voice workflow triggered by its calls. */
  const voiceLine = async (key: string, nodes: unknown[]) => {
    const number = `+1415555${String(1000 + numbers++)}`;
    const authToken = `token-${number}`;
    const created = await t.request
      .post('/v1/channels')
      .set(bearer(key))
      .send({ type: 'twilio_voice', name: `Line ${number}`, config: { account_sid: newAccountSid(), auth_token: authToken, phone_number: number } });
    expect(created.status).toBe(201);
    const connection = created.body.data as { id: string; webhook_url: string };
    const workflowId = await createActiveWorkflow(t, key, {
      name: `Voice ${number}`,
      channel: 'voice',
      configuration: { trigger: { type: 'call', channel_connection_id: connection.id }, nodes },
    });
    return { connection, workflowId, number, authToken, call: (from: string) => new FakeCall(t, connection.webhook_url, authToken, from, number) };
  };
  const executionOf = async (callSid: string) =>
    (await t.query<{ id: string; status: string; error_type: string | null; channel: string; customer_id: string }>(
      'select e.id, e.status, e.error_type, e.channel, e.customer_id from executions e join voice_calls v on v.execution_id = e.id where v.call_sid = ?',
      [callSid],
    ))[0];
  const finished = (callSid: string) => waitFor(async () => ((await executionOf(callSid))?.status !== 'running' ? executionOf(callSid) : undefined), 'the execution to finish', 60_000);
  const counts = async () =>
    (await t.query<{ n: string }>('select (select count(*) from messages) || \'/\' || (select count(*) from customers) || \'/\' || (select count(*) from executions) || \'/\' || (select count(*) from voice_calls) as n'))[0]!.n;

  /** How long the prompt activity waits before it runs (0: at once). */
  let promptDelayMs = 0;

  beforeAll(async () => {
    twilioApi = await startFakeTwilioApi();
    t = await createTestApp({ TWILIO_API_URL: twilioApi.url });
    const activities = createActivities({ services: t.services });
    // A slow prompt activity, as on a loaded worker: the caller hears the question (ask-ahead)
    // before the activity has opened the form's wait.
    const sendFormPrompt: typeof activities.sendFormPrompt = async (...args) => {
      if (promptDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, promptDelayMs));
      return await activities.sendFormPrompt(...args);
    };
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: { ...activities, sendFormPrompt } });
    admin = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await twilioApi.close();
  });

  it('connects a twilio_voice line: webhook_url, the Auth Token write-only and sealed, and /test reading the account with basic auth', async () => {
    const accountSid = newAccountSid();
    const res = await t.request
      .post('/v1/channels')
      .set(bearer(admin))
      .send({ type: 'twilio_voice', name: 'Support line', config: { account_sid: accountSid, auth_token: 'sekret-auth-token', phone_number: '+14155550100' } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ type: 'twilio_voice', channel: 'voice', status: 'active', config: { account_sid: accountSid, phone_number: '+14155550100' } });
    expect(res.body.data.webhook_url).toBe(`${t.baseUrl}/hooks/channels/${res.body.data.id}`);
    expect(JSON.stringify(res.body)).not.toContain('sekret-auth-token');
    const [row] = await t.query<{ secrets: Record<string, string> }>('select secrets from channel_connections where id = ?', [res.body.data.id]);
    expect(row!.secrets.auth_token).toBeDefined();
    expect(JSON.stringify(row)).not.toContain('sekret-auth-token');

    const ok = await t.request.post(`/v1/channels/${res.body.data.id}/test`).set(bearer(admin));
    expect(ok.body.data).toEqual({ ok: true, status_code: 200, error_message: null });
    const call = twilioApi.arrived.at(-1)!;
    expect(call.path).toBe(`/2010-04-01/Accounts/${accountSid}.json`);
    expect(call.headers.authorization).toBe(`Basic ${Buffer.from(`${accountSid}:sekret-auth-token`).toString('base64')}`);

    twilioApi.script(() => true, { status: 401, body: { code: 20003, message: 'Authenticate' } });
    const refused = await t.request.post(`/v1/channels/${res.body.data.id}/test`).set(bearer(admin));
    expect(refused.body.data).toEqual({ ok: false, status_code: 401, error_message: 'Authenticate' });
    expect((await t.request.get(`/v1/channels/${res.body.data.id}`).set(bearer(admin))).body.data.status).toBe('unauthorized');

    const bad = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'twilio_voice', name: 'Bad', config: { account_sid: 'nope', auth_token: 'x', phone_number: '0800' } });
    expect(bad.status).toBe(400);
  });

  it('refuses a wrong or missing signature with 403 and records nothing', async () => {
    const line = await voiceLine(admin, [{ id: 'hi', type: 'message', content: 'Hello' }]);
    const call = line.call('+14155550111');
    const before = await counts();
    expect((await call.post({}, 'another-token')).status).toBe(403);
    const unsigned = await t.request.post(new URL(line.connection.webhook_url).pathname).type('form').send({ CallSid: call.callSid, From: call.from, To: line.number });
    expect(unsigned.status).toBe(403);
    // Signed for other parameters than those sent.
    const params = { CallSid: call.callSid, From: call.from, To: line.number };
    const { twilioSignature } = await import('../helpers/fake-twilio');
    const tampered = await t.request
      .post(new URL(line.connection.webhook_url).pathname)
      .type('form')
      .set('X-Twilio-Signature', twilioSignature(line.authToken, line.connection.webhook_url, params))
      .send({ ...params, From: '+19995550000' });
    expect(tampered.status).toBe(403);
    expect(tampered.body.error.code).toBe('INVALID_SIGNATURE');
    expect(await counts()).toBe(before);
  });

  it('an end-to-end call: greeting, an email by speech, a misheard email asked again, success; transcript and steps recorded', async () => {
    const line = await voiceLine(admin, [
      { id: 'greet', type: 'message', content: 'Welcome to Acme support.', voice: { language: 'en-US', voice: 'Polly.Joanna' }, next: 'ask' },
      { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'What is your email?' }], next: 'bye' },
      { id: 'bye', type: 'message', content: 'Thanks, we will email you. Goodbye.' },
    ]);
    const call = line.call('+14155550122');

    const first = await call.dial();
    expect(first.map((v) => v.name)).toEqual(['Say', 'Gather', 'Redirect']);
    expect(first[0]).toMatchObject({ text: 'Welcome to Acme support.', attrs: { language: 'en-US', voice: 'Polly.Joanna' } });
    expect(first[1]!.attrs).toMatchObject({ input: 'speech dtmf', action: line.connection.webhook_url, method: 'POST' });
    expect(spoken([first[1]!])).toEqual(['What is your email?']);

    const misheard = await call.speak('ana at example');
    expect(misheard.map((v) => v.name)).toEqual(['Gather', 'Redirect']);
    expect(spoken(misheard)).toEqual(['That does not look like an email address. What is your email?']);

    const done = await call.speak('Ana at example dot com.');
    expect(done.map((v) => v.name)).toEqual(['Say', 'Hangup']);
    expect(spoken(done)).toEqual(['Thanks, we will email you. Goodbye.']);

    const execution = await finished(call.callSid);
    expect(execution).toMatchObject({ status: 'success', channel: 'voice' });
    const steps = await t.query<{ node_id: string; status: string; output: Record<string, unknown> }>(
      'select node_id, status, output from execution_steps where execution_id = ? order by started_at, id',
      [execution!.id],
    );
    expect(steps.map((s) => [s.node_id, s.status])).toEqual([
      ['greet', 'completed'],
      ['ask', 'completed'],
      ['bye', 'completed'],
    ]);
    expect(steps[1]!.output).toMatchObject({ form_data: { email: 'ana@example.com' } });
    const transcript = await t.query<{ direction: string; text: string; channel: string }>(
      'select direction, text, channel from messages where customer_id = ? order by created_at, id',
      [execution!.customer_id],
    );
    expect(transcript.map((m) => `${m.direction}: ${m.text}`)).toEqual([
      'inbound: [call]',
      'outbound: Welcome to Acme support.',
      'outbound: What is your email?',
      'inbound: ana at example',
      'outbound: That does not look like an email address. What is your email?',
      'inbound: Ana at example dot com.',
      'outbound: Thanks, we will email you. Goodbye.',
    ]);
    expect(new Set(transcript.map((m) => m.channel))).toEqual(new Set(['voice']));
    const [customer] = await t.query<{ external_id: string; channel: string }>('select external_id, channel from customers where id = ?', [execution!.customer_id]);
    expect(customer).toEqual({ external_id: '+14155550122', channel: 'voice' });

    // Each reply reached the run inside its turn's Update, once: no customerReply signal
    // beside it (a second workflow task per turn), and the reply stamped delivered, so the
    // reconciler has nothing to send again.
    const replies = await t.query<{ delivered: boolean }>(
      "select delivered_at is not null as delivered from messages where customer_id = ? and direction = 'inbound' and text <> '[call]'",
      [execution!.customer_id],
    );
    expect(replies).toEqual([{ delivered: true }, { delivered: true }]);
    const history = await t.services.temporal.client.workflow.getHandle(executionWorkflowId(execution!.id)).fetchHistory();
    const events = history.events ?? [];
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'customerReply')).toHaveLength(0);
    expect(events.filter((e) => e.workflowExecutionUpdateCompletedEventAttributes).length).toBeGreaterThanOrEqual(3);
  });

  it('a DTMF rating: one digit on the keypad', async () => {
    const line = await voiceLine(admin, [
      { id: 'csat', type: 'form', fields: [{ name: 'score', type: 'rating', required: true, label: 'Rate us from 1 to 5 on your keypad.' }], next: 'thanks' },
      { id: 'thanks', type: 'message', content: 'Thank you!' },
    ]);
    const call = line.call('+14155550133');
    const first = await call.dial();
    expect(first[0]).toMatchObject({ name: 'Gather', attrs: { input: 'speech dtmf', numDigits: '1' } });
    expect(spoken(first)).toEqual(['Rate us from 1 to 5 on your keypad.']);
    const out = await call.press('4');
    expect(spoken(out)).toEqual(['Thank you!']);
    expect(out.at(-1)!.name).toBe('Hangup');
    const execution = await finished(call.callSid);
    expect(execution!.status).toBe('success');
    const [step] = await t.query<{ output: Record<string, unknown> }>("select output from execution_steps where execution_id = ? and node_id = 'csat'", [execution!.id]);
    expect(step!.output).toMatchObject({ form_data: { score: '4' }, scores: { rating: [4] } });
    const [reply] = await t.query<{ text: string; metadata: Record<string, unknown> }>("select text, metadata from messages where execution_id = ? and direction = 'inbound' and text = '4'", [execution!.id]);
    expect(reply!.metadata).toMatchObject({ type: 'dtmf', call_sid: call.callSid });
  });

  it('answers at /hooks/voice/{id} too, the URL of numbers configured before, and points its Gather back there', async () => {
    const line = await voiceLine(admin, [
      { id: 'csat', type: 'form', fields: [{ name: 'score', type: 'rating', required: true, label: 'Rate us from 1 to 5 on your keypad.' }], next: 'thanks' },
      { id: 'thanks', type: 'message', content: 'Thank you!' },
    ]);
    const aliasUrl = `${t.baseUrl}/hooks/voice/${line.connection.id}`;
    const call = new FakeCall(t, aliasUrl, line.authToken, '+14155550134', line.number);
    const first = await call.dial();
    expect(first[0]).toMatchObject({ name: 'Gather', attrs: { action: aliasUrl } });
    expect(spoken(await call.press('5'))).toEqual(['Thank you!']);
    expect((await finished(call.callSid))!.status).toBe('success');
    // Signed over the channel route's URL but sent to the alias: not Twilio's request.
    const misdirected = new FakeCall(t, line.connection.webhook_url, line.authToken, '+14155550135', line.number);
    const res = await t.request.post(new URL(aliasUrl).pathname).type('form').set('X-Twilio-Signature', 'x').send({ CallSid: misdirected.callSid, From: misdirected.from, To: line.number });
    expect(res.status).toBe(403);
  });

  it('a hang-up mid-form ends the execution with caller_hung_up, shown as the drop-off reason', async () => {
    const line = await voiceLine(admin, [
      { id: 'ask', type: 'form', fields: [{ name: 'phone', type: 'phone', required: true, label: 'Your callback number?' }], next: 'bye' },
      { id: 'bye', type: 'message', content: 'Bye' },
    ]);
    const call = line.call('+14155550144');
    expect(spoken(await call.dial())).toEqual(['Your callback number?']);
    const status = await call.hangUp('completed');
    expect(status.status).toBe(200);
    expect(status.text).toMatch(/<Response\/>/);
    const execution = await finished(call.callSid);
    expect(execution).toMatchObject({ status: 'failed', error_type: 'timeout' });
    const [step] = await t.query<{ node_id: string; error_type: string }>("select node_id, error_type from execution_steps where execution_id = ? and status = 'failed'", [execution!.id]);
    expect(step).toEqual({ node_id: 'ask', error_type: 'caller_hung_up' });
    const [call_] = await t.query<{ end_status: string; ended_at: Date | null }>('select end_status, ended_at from voice_calls where call_sid = ?', [call.callSid]);
    expect(call_!.end_status).toBe('completed');
    const journey = await t.request.get('/v1/analytics/customers/journey').query({ journey_type: 'workflow', workflow_id: line.workflowId }).set(bearer(admin));
    expect(journey.status).toBe(200);
    expect(journey.body.data.journey.drop_off_points[0]).toMatchObject({ name: 'ask', drop_off_count: 1, common_reasons: ['caller_hung_up'] });
  });

  it("analytics: each call is one session lasting Twilio's CallDuration, and conversation journeys follow calls to their drop-off", async () => {
    const org = await t.createOrg();
    const key = (await t.createKey('admin', org)).key;
    const line = await voiceLine(key, [
      { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'bye' },
      { id: 'bye', type: 'message', content: 'Thanks, goodbye.' },
    ]);
    // The caller answers before the question's wait is open: the answer still counts as the
    // answer, not as a message that opens a journey of its own.
    promptDelayMs = 800;
    // Two calls of one caller, minutes apart: two sessions, not one.
    const first = line.call('+14155550188');
    expect(spoken(await first.dial())).toEqual(['Your email?']);
    expect(spoken(await first.speak('ana at example dot com'))).toEqual(['Thanks, goodbye.']);
    expect((await first.hangUp('completed', '42')).status).toBe(200);
    expect((await finished(first.callSid))!.status).toBe('success');
    promptDelayMs = 0;

    const second = line.call('+14155550188');
    expect(spoken(await second.dial())).toEqual(['Your email?']);
    // A CallDuration that is not whole seconds is refused and ends nothing.
    const bad = await second.post({ CallStatus: 'completed', CallDuration: 'soon' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'INVALID_REQUEST', field: 'CallDuration' });
    expect((await t.query<{ ended_at: Date | null }>('select ended_at from voice_calls where call_sid = ?', [second.callSid]))[0]!.ended_at).toBeNull();
    expect((await second.hangUp('completed', '8')).status).toBe(200);
    // A retried status callback changes nothing.
    expect((await second.hangUp('completed', '99')).status).toBe(200);
    expect((await finished(second.callSid))!.status).toBe('failed');
    const calls = await t.query<{ duration_seconds: number }>('select duration_seconds from voice_calls where call_sid in (?, ?) order by started_at', [first.callSid, second.callSid]);
    expect(calls.map((c) => c.duration_seconds)).toEqual([42, 8]);

    const engagement = await t.request.get('/v1/analytics/customers/engagement').query({ channel: 'voice' }).set(bearer(key));
    expect(engagement.status).toBe(200);
    // (42 + 8) / 2 seconds; messages: [call], question, reply, goodbye | [call], question.
    expect(engagement.body.data.engagement).toMatchObject({ active_customers: 1, average_session_duration: 25, average_messages_per_session: 3 });
    expect(engagement.body.data.engagement.engagement_by_channel.voice).toMatchObject({ customers: 1, average_session_duration: 25 });

    const journey = await t.request.get('/v1/analytics/customers/journey').set(bearer(key));
    expect(journey.status).toBe(200);
    expect(journey.body.data.journey).toMatchObject({ total_journeys: 2, completed_journeys: 1 });
    expect(journey.body.data.journey.journey_steps.map((s: { name: string; customers: number }) => [s.name, s.customers])).toEqual([
      ['message_received', 2],
      ['execution_started', 2],
      ['first_reply_sent', 2],
      ['input_collected', 2],
      ['completed', 1],
    ]);
    const dropOff = journey.body.data.journey.drop_off_points.find((d: { name: string }) => d.name === 'input_collected');
    expect(dropOff).toMatchObject({ drop_off_count: 1, common_reasons: ['caller_hung_up'] });
  });

  it('a call with no matching workflow gets a polite goodbye and is recorded like an unmatched message', async () => {
    const created = await t.request
      .post('/v1/channels')
      .set(bearer(admin))
      .send({ type: 'twilio_voice', name: 'Idle line', config: { account_sid: newAccountSid(), auth_token: 'idle-token', phone_number: '+14155559999' } });
    const call = new FakeCall(t, created.body.data.webhook_url, 'idle-token', '+14155550155', '+14155559999');
    const verbs = await call.dial();
    expect(verbs.map((v) => v.name)).toEqual(['Say', 'Hangup']);
    const [message] = await t.query<{ text: string; execution_id: string | null; channel: string }>(
      "select m.text, m.execution_id, m.channel from messages m join customers c on c.id = m.customer_id where c.external_id = '+14155550155'",
    );
    expect(message).toEqual({ text: '[call]', execution_id: null, channel: 'voice' });
  });

  it('two organizations whose numbers never cross', async () => {
    const orgB = await t.createOrg();
    const adminB = (await t.createKey('admin', orgB)).key;
    const lineA = await voiceLine(admin, [{ id: 'a', type: 'message', content: 'This is A' }]);
    const lineB = await voiceLine(adminB, [{ id: 'b', type: 'message', content: 'This is B' }]);
    // A's hook with B's token, and B's number on A's hook: refused.
    expect((await new FakeCall(t, lineA.connection.webhook_url, lineB.authToken, '+14155550166', lineA.number).post({})).status).toBe(403);
    expect((await new FakeCall(t, lineA.connection.webhook_url, lineA.authToken, '+14155550166', lineB.number).post({})).status).toBe(403);
    expect((await t.request.get(`/v1/channels/${lineB.connection.id}`).set(bearer(admin))).status).toBe(404);
    const callA = lineA.call('+14155550166');
    const callB = lineB.call('+14155550166');
    expect(spoken(await callA.dial())).toEqual(['This is A']);
    expect(spoken(await callB.dial())).toEqual(['This is B']);
    const customers = await t.query<{ organization_id: string }>("select organization_id from customers where external_id = '+14155550166' and channel = 'voice' order by organization_id");
    expect(customers.map((c) => c.organization_id).sort()).toEqual([(await t.createKey('read')).organizationId, orgB].sort());
    expect((await executionOf(callA.callSid))!.id).not.toBe((await executionOf(callB.callSid))!.id);
  });
});
