/**
 * A worker SIGKILLed between two gathers of a call: the caller's next reply arrives while no
 * worker runs, so its turn cannot complete within VOICE_ANSWER_BUDGET_MS and the hook
 * answers `<Pause/><Redirect>`; once a new worker runs, the redirected request gets the
 * right TwiML, and the execution's steps and transcript hold each message exactly once.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { FakeCall, newAccountSid, parseTwiml, spoken } from '../helpers/fake-twilio';
import { type SpawnedProcess, spawnService } from '../helpers/process';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow } from '../executions/helpers';

jest.setTimeout(180_000);

describe('voice calls across a worker crash', () => {
  let t: TestApp;
  const children: SpawnedProcess[] = [];
  const startWorker = async () => {
    const p = spawnService('worker', t, { EXECUTION_RECONCILE_INTERVAL_MS: '200' });
    children.push(p);
    await p.waitForLine(/worker running/, 90_000);
    return p;
  };

  beforeAll(async () => {
    t = await createTestApp({ VOICE_ANSWER_BUDGET_MS: '1500' });
  });
  afterAll(async () => {
    for (const c of children.splice(0)) await c.kill('SIGKILL');
    await t.close();
  });

  it('a worker killed between two gathers: the redirect path answers the right TwiML, nothing lost or repeated', async () => {
    const admin = (await t.createKey('admin')).key;
    const created = await t.request
      .post('/v1/channels')
      .set(bearer(admin))
      .send({ type: 'twilio_voice', name: 'Line', config: { account_sid: newAccountSid(), auth_token: 'crash-token', phone_number: '+14155550100' } });
    expect(created.status).toBe(201);
    await createActiveWorkflow(t, admin, {
      name: 'Voice intake',
      channel: 'voice',
      configuration: {
        trigger: { type: 'call' },
        nodes: [
          { id: 'name', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Your name?' }], next: 'email' },
          { id: 'email', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'bye' },
          { id: 'bye', type: 'message', content: 'Thanks, goodbye.' },
        ],
      },
    });
    const worker = await startWorker();
    const call = new FakeCall(t, created.body.data.webhook_url, 'crash-token', '+14155550177', '+14155550100');
    expect(spoken(await call.dial())).toEqual(['Your name?']);
    expect(spoken(await call.speak('Ana'))).toEqual(['Your email?']);

    await worker.kill('SIGKILL');
    // No worker: the turn cannot reach the next wait in time.
    const paused = await call.post({ SpeechResult: 'ana at example dot com', Confidence: '0.9' });
    expect(paused.status).toBe(200);
    expect(parseTwiml(paused.text).map((v) => v.name)).toEqual(['Pause', 'Redirect']);
    expect(parseTwiml(paused.text)[1]!.text).toBe(call.hookUrl);

    await startWorker();
    // Twilio follows the redirect: the request carries no input; the answer is what the run produced since.
    const after = await call.turn({});
    expect(after.map((v) => v.name)).toEqual(['Say', 'Hangup']);
    expect(spoken(after)).toEqual(['Thanks, goodbye.']);

    const [execution] = await waitFor(async () => {
      const rows = await t.query<{ id: string; status: string; customer_id: string }>(
        "select e.id, e.status, e.customer_id from executions e join voice_calls v on v.execution_id = e.id where v.call_sid = ? and e.status <> 'running'",
        [call.callSid],
      );
      return rows.length > 0 ? rows : undefined;
    }, 'the execution to finish', 60_000);
    expect(execution!.status).toBe('success');
    const steps = await t.query<{ node_id: string; output: Record<string, unknown> }>('select node_id, output from execution_steps where execution_id = ? order by started_at, id', [execution!.id]);
    expect(steps.map((s) => s.node_id)).toEqual(['name', 'email', 'bye']);
    expect(steps[1]!.output).toMatchObject({ form_data: { email: 'ana@example.com' } });
    const transcript = await t.query<{ direction: string; text: string }>('select direction, text from messages where customer_id = ? order by created_at, id', [execution!.customer_id]);
    expect(transcript.map((m) => `${m.direction}: ${m.text}`)).toEqual([
      'inbound: [call]',
      'outbound: Your name?',
      'inbound: Ana',
      'outbound: Your email?',
      'inbound: ana at example dot com',
      'outbound: Thanks, goodbye.',
    ]);
  });
});
