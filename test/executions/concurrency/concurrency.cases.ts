/**
 * One conversation per customer (`configuration.concurrency`, default `limit: 1,
 * on_conflict: "skip"`), end to end: two API apps on one database (two "processes"), one
 * Temporal worker and a local channel provider.
 *
 * - 20 customers × 5 rapid "hello"s, sent at once through both apps, start exactly 20
 *   executions; the other 80 messages answer `skipped` / `already_running` with the running
 *   execution, and the trigger's firings record them as `skipped`;
 * - once the execution ended, the customer's next message starts a new one;
 * - a reply to a waiting form is not subject to the rule: it resumes the form.
 */
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { resendWhileUnavailable } from '../../helpers/wait';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('one conversation per customer', () => {
  let provider: ChannelProvider;
  let t: TestApp;
  let other: TestApp;
  let worker: TestWorker;
  let key: string;
  let organizationId: string;

  beforeAll(async () => {
    provider = await startChannelProvider();
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url });
    other = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_TASK_QUEUE: t.config.TEMPORAL_TASK_QUEUE, CHANNEL_PROVIDER_URL: provider.url });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    ({ key, organizationId } = await t.createKey('admin'));
  });
  afterAll(async () => {
    await worker.stop();
    await other.close();
    await t.close();
    await provider.close();
  });

  /** As a client does: a 503 (nothing was written) is sent again after its Retry-After, so each message is accepted once. */
  const send = (app: TestApp, body: object) => resendWhileUnavailable(() => app.request.post('/v1/messages').set(bearer(key)).send(body));

  it('20 customers × 5 rapid "hello"s through two API processes start exactly 20 executions; the rest are skipped', async () => {
    // The welcome is held at the provider: every first execution is still running while the burst arrives.
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Welcome',
      channel: 'whatsapp',
      configuration: { nodes: [{ id: 'hi', type: 'message', content: 'Welcome, how can we help?' }] },
    });
    const trigger = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'Hello', type: 'message', workflow_id: workflowId, channel: 'whatsapp', configuration: { keywords: ['hello'] } });
    expect(trigger.status).toBe(201);
    const release = provider.holdText('Welcome, how can we help?');

    const customers = Array.from({ length: 20 }, (_, i) => `+1555010${String(i).padStart(4, '0')}`);
    const answers = await Promise.all(
      customers.flatMap((customer, c) =>
        Array.from({ length: 5 }, (_, i) => send((c + i) % 2 === 0 ? t : other, { channel: 'whatsapp', customer_id: customer, message: 'hello' })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 201));

    const outcomes = answers.map((a) => a.body.data);
    const started = outcomes.filter((o) => o.status === 'started');
    const skipped = outcomes.filter((o) => o.status === 'skipped');
    expect(started).toHaveLength(20);
    expect(skipped).toHaveLength(80);
    // Exactly one start per customer, and each skip names the execution its customer is running.
    const runningByCustomer = new Map(started.map((o) => [o.customer_id, o.executions[0].id]));
    expect(runningByCustomer.size).toBe(20);
    for (const o of skipped) {
      expect(o.executions).toEqual([
        { id: runningByCustomer.get(o.customer_id), workflow_id: workflowId, trigger_id: trigger.body.data.id, action: 'skipped', reason: 'already_running' },
      ]);
    }
    const rows = await t.query<{ n: number }>('select count(*)::int as n from executions where workflow_id = ?', [workflowId]);
    expect(rows[0]!.n).toBe(20);
    // Every message is in the transcript; only the starting ones are linked to an execution.
    const messages = await t.query<{ linked: number; all: number }>(
      `select count(execution_id)::int as linked, count(*)::int as all from messages where organization_id = ? and direction = 'inbound'`,
      [organizationId],
    );
    expect(messages[0]).toEqual({ linked: 20, all: 100 });

    // The trigger's firings record the skips.
    const firings = await t.request.get(`/v1/triggers/${trigger.body.data.id}/executions?status=skipped&limit=100`).set(bearer(key));
    expect(firings.status).toBe(200);
    expect(firings.body.data).toHaveLength(80);
    expect(firings.body.data[0]).toMatchObject({ status: 'skipped', output: { workflow_execution_id: null } });

    release();
    // The first five answers are customers[0]'s.
    const firstRunning = runningByCustomer.get(outcomes[0].customer_id)!;
    await waitForExecution(t, key, workflowId, firstRunning, 'success');

    // The slot is free again: the customer's next "hello" starts a new conversation.
    const next = await send(other, { channel: 'whatsapp', customer_id: customers[0], message: 'hello' });
    expect(next.body.data).toMatchObject({ status: 'started', executions: [{ action: 'started', workflow_id: workflowId }] });
    expect(next.body.data.executions[0].id).not.toBe(firstRunning);
    await waitForExecution(t, key, workflowId, next.body.data.executions[0].id, 'success');
  });

  it('a reply to a waiting form is never subject to the rule: it resumes the form', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Name form',
      channel: 'instagram',
      configuration: {
        trigger: { type: 'keyword', keywords: ['hello'] },
        concurrency: { per: 'customer', limit: 1, on_conflict: 'skip' },
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'What is your name?' }], next: 'thanks' },
          { id: 'thanks', type: 'message', content: 'Thanks!' },
        ],
      },
    });
    const first = await send(t, { channel: 'instagram', customer_id: 'form-1', message: 'hello' });
    const executionId = first.body.data.executions[0].id as string;
    await waitFor(
      async () => ((await t.query('select 1 from executions where id = ? and waiting_node_id is not null', [executionId])).length > 0 ? true : undefined),
      'the form to wait for its reply',
    );
    // The reply even matches the keyword; it belongs to the running execution's form.
    const reply = await send(other, { channel: 'instagram', customer_id: 'form-1', message: 'hello, I am Ada' });
    expect(reply.body.data).toMatchObject({ status: 'resumed', executions: [{ id: executionId, action: 'resumed' }] });
    const done = await waitForExecution(t, key, workflowId, executionId, 'success');
    expect(done.steps[0]).toMatchObject({ node_id: 'ask', output: { form_data: { name: 'hello, I am Ada' } } });
  });

  it('rejects a concurrency rule it does not know (400, nothing created)', async () => {
    const res = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Bad rule', channel: 'whatsapp', configuration: { concurrency: { per: 'channel' }, nodes: [{ id: 'a', type: 'message', content: 'x' }] } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_WORKFLOW_CONFIG', field: 'configuration.concurrency.per' });
    expect(await t.query("select 1 from workflows where name = 'Bad rule'")).toHaveLength(0);
  });
});
