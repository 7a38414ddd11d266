/**
 * A form wait and Meta's customer service window: a wait that outlasts the window ends at
 * the window's close with `customer_service_window_closed` (Meta would refuse whatever the
 * form sent next), unless the form has a template to re-open the conversation. The window
 * is shortened to seconds with the test-only CUSTOMER_SERVICE_WINDOW_SECONDS; hooks are
 * signed with a real HMAC and the sends go to a fake Graph API.
 */
import '../helpers/short-form-timeouts';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type FakeMeta, startFakeMeta, whatsAppText, postSignedHook } from '../helpers/fake-meta';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow } from '../executions/helpers';

const PHONE_ID = '106540352242933';
const SECRET = 'wa-window-secret';
// Long enough that the prompt goes out inside it on a loaded machine (the window counts from the
// message's whole-second timestamp, so up to a second of it is gone on arrival).
const WINDOW_SECONDS = 5;

describe('a form wait and the customer service window', () => {
  let t: TestApp;
  let meta: FakeMeta;
  let worker: TestWorker;
  let admin: string;
  let wa: string;

  const hook = (body: unknown) => {
    return postSignedHook(t.request, wa, body, SECRET);
  };
  const textsTo = (to: string) => meta.sends.filter((s) => s.status === 200 && s.body?.to === to).map((s) => s.body?.text?.body ?? `template:${s.body?.template?.name}`);
  const failedExecution = (externalId: string) =>
    waitFor(async () => {
      const [e] = await t.query<{ id: string; status: string; error_type: string | null; error_message: string | null }>(
        'select e.id, e.status, e.error_type, e.error_message from executions e join customers c on c.id = e.customer_id where c.external_id = ? order by e.started_at desc limit 1',
        [externalId],
      );
      return e?.status === 'failed' ? e : undefined;
    }, `the execution of ${externalId} to fail`);
  const failedStep = async (executionId: string) =>
    (await t.query<{ node_id: string; error_type: string; error_message: string }>("select node_id, error_type, error_message from execution_steps where execution_id = ? and status = 'failed'", [executionId]))[0];
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);

  beforeAll(async () => {
    meta = await startFakeMeta();
    t = await createTestApp({ META_GRAPH_API_URL: meta.url, CHANNEL_PROVIDER_TIMEOUT_MS: '1000', CUSTOMER_SERVICE_WINDOW_SECONDS: String(WINDOW_SECONDS) });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    admin = (await t.createKey('admin')).key;
    wa = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'EAAG-token', app_secret: SECRET } })).body
      .data.id;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await meta.close();
  });

  it('a wait that outlasts the window ends at its close with customer_service_window_closed; journeys show that reason', async () => {
    // The form would wait an hour; the window closes WINDOW_SECONDS after the customer's message.
    const wf = await createActiveWorkflow(t, admin, {
      name: 'Survey',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['survey'] },
        nodes: [{ id: 'ask', type: 'form', timeout_seconds: 3600, fields: [{ name: 'score', type: 'nps', required: true, label: 'How likely are you to recommend us?' }] }],
      },
    });
    const waId = '15550300001';
    await hook(whatsAppText(PHONE_ID, waId, 'survey').body).expect(200);
    const execution = await failedExecution(waId);
    expect(execution.error_type).toBe('api_error');
    const step = await failedStep(execution.id);
    expect(step).toMatchObject({ node_id: 'ask', error_type: 'customer_service_window_closed' });
    expect(step!.error_message).toMatch(/customer service window closed/);
    expect(textsTo(waId)).toEqual(['How likely are you to recommend us?']);

    const journey = await t.request.get(`/v1/analytics/customers/journey?start_date=${day(-1)}&end_date=${day(1)}&journey_type=workflow&workflow_id=${wf}`).set(bearer(admin));
    expect(journey.status).toBe(200);
    expect(journey.body.data.journey.drop_off_points).toEqual([
      { step: 1, name: 'ask', drop_off_count: 1, drop_off_rate: 1, common_reasons: ['customer_service_window_closed'] },
    ]);
    // Performance error rates give the window its own bucket, not api_error.
    const performance = await t.request.get(`/v1/analytics/workflows/${wf}/performance?start_date=${day(-1)}&end_date=${day(1)}`).set(bearer(admin));
    expect(performance.status).toBe(200);
    expect(performance.body.data.performance.error_rate).toEqual({ overall: 1, by_error_type: { timeout: 0, api_error: 0, validation_error: 0, window_closed: 1 } });
  });

  it('a form with a template waits its own timeout past the window', async () => {
    await createActiveWorkflow(t, admin, {
      name: 'Quiz',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['quiz'] },
        nodes: [
          {
            id: 'ask',
            type: 'form',
            timeout_seconds: WINDOW_SECONDS + 2,
            template: { name: 'quiz_reminder', language: 'en_US' },
            fields: [{ name: 'answer', type: 'text', required: true, label: 'Your answer?' }],
          },
        ],
      },
    });
    const waId = '15550300002';
    await hook(whatsAppText(PHONE_ID, waId, 'quiz').body).expect(200);
    const execution = await failedExecution(waId);
    // Past the window's close, the form's own timeout ended it.
    expect(execution.error_type).toBe('timeout');
    expect(await failedStep(execution.id)).toMatchObject({ node_id: 'ask', error_type: 'timeout' });
    // Inside the window the prompt itself went out, not the template.
    expect(textsTo(waId)).toEqual(['Your answer?']);
  });
});
