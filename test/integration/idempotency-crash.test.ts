/**
 * Nothing done twice through an `Idempotency-Key`: for each kind of route whose work has
 * effects, a spawned API process is SIGKILLed at the failpoint `idempotency.before_store`,
 * after the request's work (and its recovery point) committed and before its answer was
 * stored or sent. The client retries with the same key on another API (the test app): it
 * gets the first try's answer, rebuilt from the committed rows, with
 * `Idempotent-Replayed: true`, and the work exists once (one message, one execution, one
 * outbound message, one delivery, one record). A further retry replays the stored answer.
 *
 * One database and one in-process worker for the file; an armed API is started for each
 * case (the previous one died at its failpoint), the next one while a case runs.
 */
import { randomUUID } from 'node:crypto';
import { reconcileOnce } from '../../src/reconciler';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { freePort, type SpawnedProcess, spawnService } from '../helpers/process';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { createActiveWorkflow, waitForExecution } from '../executions/helpers';

jest.setTimeout(180_000);

describe('Idempotency-Key: an API killed between the work’s commit and its stored answer', () => {
  let t: TestApp;
  let key: string;
  let worker: TestWorker;
  let greeter: string;
  /** The next armed API, starting while the current case runs. */
  let spare: Promise<{ api: SpawnedProcess; port: number }> | undefined;
  const spawned: SpawnedProcess[] = [];
  const startArmed = async () => {
    const port = await freePort();
    const api = spawnService('api', t, { PORT: String(port), FAILPOINTS: 'idempotency.before_store' });
    spawned.push(api);
    await api.waitForLine(/API listening/, 60_000);
    return { api, port };
  };

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    key = (await t.createKey('admin')).key;
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    greeter = await createActiveWorkflow(t, key, {
      name: 'Idempotent greeter',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'hi', type: 'message', content: 'Hi there' }] },
    });
    spare = startArmed();
  });
  afterAll(async () => {
    await spare?.catch(() => undefined);
    for (const p of spawned) await p.kill('SIGKILL');
    await worker?.stop();
    await t?.close();
  });

  const post = (path: string, idempotencyKey: string, body?: object) => {
    const req = t.request.post(path).set(bearer(key)).set('Idempotency-Key', idempotencyKey);
    return body === undefined ? req : req.send(body);
  };

  /**
   * Sends the request to an API armed with the failpoint (it dies after the commit), then
   * the same request with the same key to the test app: the answer of the first try, replayed.
   */
  async function crashThenRetry(path: string, body?: object) {
    const { api, port } = await spare!;
    spare = startArmed();
    const idempotencyKey = `crash-${randomUUID()}`;
    const first = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey, ...bearer(key) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(first).toBe('connection lost');
    await api.exited;
    expect(api.lines.join('\n')).toContain('failpoint idempotency.before_store: SIGKILL');
    // Its work committed with its recovery point; its answer was never stored.
    const [claim] = await t.query<{ status_code: number | null; recovery_point: object | null }>(
      'select status_code, recovery_point from idempotency_keys where key = ?',
      [idempotencyKey],
    );
    expect(claim).toEqual({ status_code: null, recovery_point: expect.any(Object) });

    const retry = await post(path, idempotencyKey, body);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const again = await post(path, idempotencyKey, body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect([again.status, again.body]).toEqual([retry.status, retry.body]);
    return retry;
  }

  /** What the reconciler would start: the dead API may have died before its Temporal start. */
  const reconcile = () => reconcileOnce(t.services, 0);

  it('POST /v1/messages: one inbound message, one execution, one reply sent', async () => {
    const message = { channel: 'whatsapp', customer_id: 'idem-msg', message: 'hello there' };
    const retry = await crashThenRetry('/v1/messages', message);
    expect(retry.status).toBe(201);
    const inbound = await t.query<{ id: string }>("select m.id from messages m join customers c on c.id = m.customer_id where c.external_id = ? and m.direction = 'inbound'", ['idem-msg']);
    expect(inbound).toHaveLength(1);
    const executions = await t.query<{ id: string }>('select id from executions where message_id = ?', [inbound[0]!.id]);
    expect(executions).toHaveLength(1);
    expect(retry.body.data).toMatchObject({ message_id: inbound[0]!.id, status: 'started', executions: [{ id: executions[0]!.id, workflow_id: greeter, action: 'started' }] });
    await reconcile();
    await waitForExecution(t, key, greeter, executions[0]!.id, 'success', 60_000);
    expect(await t.query("select 1 from messages where execution_id = ? and direction = 'outbound'", [executions[0]!.id])).toHaveLength(1);
  });

  it('POST /v1/triggers/{id}/fire: one firing, one execution, its step run once', async () => {
    const trigger = await t.request.post('/v1/triggers').set(bearer(key)).send({ name: 'Idempotent api', type: 'api', workflow_id: greeter, configuration: {} });
    expect(trigger.status).toBe(201);
    const triggerId = trigger.body.data.id as string;
    const retry = await crashThenRetry(`/v1/triggers/${triggerId}/fire`, { order: 42 });
    expect(retry.status).toBe(201);
    const firings = await t.query<{ id: string; execution_id: string }>('select id, execution_id from trigger_executions where trigger_id = ?', [triggerId]);
    expect(firings).toEqual([{ id: retry.body.data.id, execution_id: expect.any(String) }]);
    expect(await t.query('select 1 from executions where trigger_id = ?', [triggerId])).toHaveLength(1);
    await reconcile();
    await waitForExecution(t, key, greeter, firings[0]!.execution_id, 'success', 60_000);
    expect(await t.query('select 1 from execution_steps where execution_id = ?', [firings[0]!.execution_id])).toHaveLength(1);
  });

  it('POST /v1/workflows/{id}/executions/{id}/retry: one new execution', async () => {
    const started = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'idem-retry', message: 'hello' });
    const original = started.body.data.executions[0].id as string;
    await waitForExecution(t, key, greeter, original, 'success', 60_000);
    await t.query("update executions set status = 'failed' where id = ?", [original]);
    const retry = await crashThenRetry(`/v1/workflows/${greeter}/executions/${original}/retry`);
    expect(retry.status).toBe(201);
    const retries = await t.query<{ id: string }>('select id from executions where retry_of = ?', [original]);
    expect(retries).toEqual([{ id: retry.body.data.id }]);
  });

  it('POST /v1/webhooks/{id}/logs/{id}/redeliver: one delivery', async () => {
    const hook = await t.request.post('/v1/webhooks').set(bearer(key)).send({ url: 'https://127.0.0.1:9/hook', events: ['workflow.completed'], retry_policy: { max_retries: 0 } });
    expect(hook.status).toBe(201);
    const hookId = hook.body.data.id as string;
    const [event] = await t.query<{ id: string; type: string; organization_id: string }>("select id, type, organization_id from events where type = 'workflow.completed' limit 1");
    await t.query(
      `insert into webhook_logs (id, webhook_id, organization_id, event_id, event_type, status, response_code, response_time_ms, attempt)
       values ('whlog_idem', ?, ?, ?, ?, 'failed', 500, 12, 1)`,
      [hookId, event!.organization_id, event!.id, event!.type],
    );
    const retry = await crashThenRetry(`/v1/webhooks/${hookId}/logs/whlog_idem/redeliver`);
    expect(retry.status).toBe(200);
    // The one delivery runs (to a closed port: one failed attempt, logged).
    const deliveryId = retry.body.data.delivery_id as string;
    await t.services.temporal.client.workflow.getHandle(deliveryId).result().catch(() => undefined);
    const attempts = await t.query<{ attempt: number }>('select attempt from webhook_logs where webhook_id = ? and event_id = ? order by attempt', [hookId, event!.id]);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
  });

  it('POST /v1/replays: one replay', async () => {
    const retry = await crashThenRetry('/v1/replays', { filter: { workflow_id: greeter, status: 'failed' } });
    expect(retry.status).toBe(201);
    expect(await t.query<{ id: string }>('select id from replays')).toEqual([{ id: retry.body.data.id }]);
  });

  it('POST /v1/analytics/export and /v1/analytics/reports: one export, one report', async () => {
    const exported = await crashThenRetry('/v1/analytics/export', { data_type: 'executions', format: 'csv' });
    expect(exported.status).toBe(201);
    expect(await t.query<{ id: string }>('select id from exports')).toEqual([{ id: exported.body.data.export_id }]);
    const report = await crashThenRetry('/v1/analytics/reports', { name: 'Idempotent', metrics: ['total_executions'] });
    expect(report.status).toBe(201);
    expect(await t.query<{ id: string }>('select id from reports')).toEqual([{ id: report.body.data.report_id }]);
  });

  it('POST /v1/customers/{id}/messages: one agent message, sent once', async () => {
    await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'idem-agent', message: 'a question' }).expect(201);
    const [customer] = await t.query<{ id: string }>('select id from customers where external_id = ?', ['idem-agent']);
    const retry = await crashThenRetry(`/v1/customers/${customer!.id}/messages`, { text: 'A person answers' });
    expect(retry.status).toBe(202);
    const sent = await t.query<{ id: string }>("select id from messages where customer_id = ? and sender = 'agent'", [customer!.id]);
    expect(sent).toEqual([{ id: retry.body.data.id }]);
    await reconcile();
    expect(await t.query('select id from messages where customer_id = ? and sender = ?', [customer!.id, 'agent'])).toHaveLength(1);
  });
});
