/**
 * Webhook delivery end to end with a real HTTPS receiver, a real worker and the event
 * dispatcher: outbox row → delivery workflow → signed POST → log row, and the retry rules
 * of DESIGN "Which answers count".
 */
import { temporal } from '@temporalio/proto';
import { waitFor } from '../../helpers/wait';
import { hexSignature, startWebhookKit, verifyStandardWebhook, type WebhookKit } from '../../helpers/webhooks';
import { deliveryWorkflowId } from '../../../temporal/webhooks.shared';

const { EventType } = temporal.api.enums.v1;

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit();
});
afterAll(async () => {
  await kit?.close();
});

const workflowStatus = async (eventId: string, hookId: string) =>
  (await kit.t.services.temporal.client.workflow.getHandle(deliveryWorkflowId(eventId, hookId)).describe()).status.name;

/** What an operator sees of the delivery in the Temporal UI: its events by type. */
async function historyEventCounts(eventId: string, hookId: string) {
  const history = await kit.t.services.temporal.client.workflow.getHandle(deliveryWorkflowId(eventId, hookId)).fetchHistory();
  const count = (type: number) => history.events!.filter((e) => e.eventType === type).length;
  return {
    localAttempts: count(EventType.EVENT_TYPE_MARKER_RECORDED),
    taskQueueActivities: count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED),
    events: history.events!.length,
  };
}

test('an event is delivered once, signed, with the spec payload, and logged as attempt 1', async () => {
  const { orgId, auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/signed');
  const eventId = await kit.emit(orgId, 'workflow.completed');
  const [req] = await kit.receiver.waitFor('/signed', 1);
  const payload = JSON.parse(req!.body);
  expect(payload).toEqual({
    id: eventId,
    type: 'workflow.completed',
    timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    data: { workflow_id: 'wf_test', execution_id: 'exec_test', status: 'success', duration_ms: 12, customer_id: 'cus_test', channel: 'whatsapp' },
    metadata: { webhook_id: hook.id, retry_count: 0, version: '1.0' },
  });
  expect(req!.method).toBe('POST');
  expect(req!.headers['content-type']).toBe('application/json');
  expect(req!.headers['x-service-signature']).toBe(hexSignature(hook.secret, req!.body));
  expect(req!.headers['x-service-signature']).toMatch(/^[0-9a-f]{64}$/);
  expect(req!.headers['x-service-event-id']).toBe(eventId);
  expect(req!.headers['x-service-delivery-attempt']).toBe('1');
  expect(req!.headers['webhook-id']).toBe(eventId);
  expect(Math.abs(Number(req!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
  expect(verifyStandardWebhook(hook.secret, req!)).toBe(true);
  expect(verifyStandardWebhook('another-secret-value', req!)).toBe(false);

  const logs = await waitFor(async () => {
    const l = await kit.logs(auth, hook.id);
    return l.length === 1 ? l : undefined;
  });
  expect(logs[0]).toMatchObject({ event_id: eventId, event_type: 'workflow.completed', status: 'success', response_code: 200, attempt: 1, error_message: null });
  // Stamped by the dispatcher; a webhook not subscribed to a type gets nothing.
  const [row] = await kit.t.query<{ dispatched_at: Date | null }>('select dispatched_at from events where id = ?', [eventId]);
  expect(row!.dispatched_at).not.toBeNull();
  // The first attempt ran inside the workflow's first task: a marker, no activity task.
  await waitFor(async () => (await workflowStatus(eventId, hook.id)) === 'COMPLETED');
  expect(await historyEventCounts(eventId, hook.id)).toEqual({ localAttempts: 1, taskQueueActivities: 0, events: 6 });
  await kit.emit(orgId, 'message.sent', { message_id: 'msg_1' });
  await waitFor(async () => (await kit.t.query('select 1 from events where dispatched_at is null and organization_id = ?', [orgId])).length === 0);
  expect(kit.receiver.requestsTo('/signed')).toHaveLength(1);
});

test('503, 503, 200: exactly three attempts, growing gaps, retry_count 0,1,2, one event id, one log row each', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/flaky', (n) => (n < 2 ? { status: 503 } : { status: 200 }));
  // The dev server fires retry timers with about one second of resolution: use a delay it can show doubling.
  const hook = await kit.createHook(auth, '/flaky', { retry_policy: { max_retries: 3, retry_delay_ms: 1000 } });
  const eventId = await kit.emit(orgId, 'workflow.completed');
  const reqs = await kit.receiver.waitFor('/flaky', 3);
  await waitFor(async () => (await workflowStatus(eventId, hook.id)) === 'COMPLETED');
  expect(kit.receiver.requestsTo('/flaky')).toHaveLength(3);
  const bodies = reqs.map((r) => JSON.parse(r.body));
  expect(bodies.map((b) => b.metadata.retry_count)).toEqual([0, 1, 2]);
  expect(new Set(bodies.map((b) => b.id))).toEqual(new Set([eventId]));
  expect(reqs.map((r) => r.headers['x-service-event-id'])).toEqual([eventId, eventId, eventId]);
  expect(reqs.map((r) => r.headers['x-service-delivery-attempt'])).toEqual(['1', '2', '3']);
  const gap1 = reqs[1]!.at - reqs[0]!.at;
  const gap2 = reqs[2]!.at - reqs[1]!.at;
  expect(gap1).toBeGreaterThanOrEqual(950); // retry_delay_ms
  // Lower bounds from the policy only: a loaded machine can stretch a gap, never shorten it.
  expect(gap2).toBeGreaterThanOrEqual(1900); // retry_delay_ms × 2
  const logs = await kit.logs(auth, hook.id);
  expect(logs.map((l) => [l.attempt, l.status, l.response_code])).toEqual([
    [1, 'failed', 503],
    [2, 'failed', 503],
    [3, 'success', 200],
  ]);
  expect(logs[0]!.error_message).toContain('503');
  // Attempt 1 local, attempts 2 and 3 one task-queue activity under the rest of the policy.
  expect(await historyEventCounts(eventId, hook.id)).toMatchObject({ localAttempts: 1, taskQueueActivities: 1 });
});

test('404 is final: exactly one attempt', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/missing', () => ({ status: 404 }));
  const hook = await kit.createHook(auth, '/missing', { retry_policy: { max_retries: 5, retry_delay_ms: 100 } });
  const eventId = await kit.emit(orgId, 'workflow.completed');
  await waitFor(async () => (await workflowStatus(eventId, hook.id)) === 'FAILED');
  expect(kit.receiver.requestsTo('/missing')).toHaveLength(1);
  const logs = await kit.logs(auth, hook.id);
  expect(logs.map((l) => [l.attempt, l.status, l.response_code])).toEqual([[1, 'failed', 404]]);
});

test('410 is final and deactivates the webhook; later events are not sent to it', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/gone', () => ({ status: 410 }));
  const hook = await kit.createHook(auth, '/gone');
  const eventId = await kit.emit(orgId, 'workflow.completed');
  await waitFor(async () => (await workflowStatus(eventId, hook.id)) === 'FAILED');
  const got = await kit.t.request.get(`/v1/webhooks/${hook.id}`).set(auth);
  expect(got.body.data.active).toBe(false);
  const second = await kit.emit(orgId, 'workflow.completed');
  await waitFor(async () => (await kit.t.query('select 1 from events where id = ? and dispatched_at is not null', [second])).length === 1);
  expect(kit.receiver.requestsTo('/gone')).toHaveLength(1);
  // Re-enabled through update, it receives events again.
  kit.script('/gone', () => ({ status: 200 }));
  const upd = await kit.t.request.put(`/v1/webhooks/${hook.id}`).set(auth).send({ active: true });
  expect(upd.status).toBe(200);
  await kit.emit(orgId, 'workflow.completed');
  await kit.receiver.waitFor('/gone', 2);
});

test('429 with Retry-After waits that long before the next attempt', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/throttled', (n) => (n === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
  await kit.createHook(auth, '/throttled', { retry_policy: { max_retries: 2, retry_delay_ms: 100 } });
  await kit.emit(orgId, 'workflow.completed');
  const reqs = await kit.receiver.waitFor('/throttled', 2);
  expect(reqs[1]!.at - reqs[0]!.at).toBeGreaterThanOrEqual(1900);
});

test('a redirect is not followed; it counts as a failed attempt and is retried', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/moved', () => ({ status: 302, headers: { location: kit.receiver.url('/moved-target') } }));
  const hook = await kit.createHook(auth, '/moved', { retry_policy: { max_retries: 1, retry_delay_ms: 100 } });
  const eventId = await kit.emit(orgId, 'workflow.completed');
  await waitFor(async () => (await workflowStatus(eventId, hook.id)) === 'FAILED');
  expect(kit.receiver.requestsTo('/moved')).toHaveLength(2);
  expect(kit.receiver.requestsTo('/moved-target')).toHaveLength(0);
  const logs = await kit.logs(auth, hook.id);
  expect(logs.map((l) => [l.attempt, l.status, l.response_code])).toEqual([
    [1, 'failed', 302],
    [2, 'failed', 302],
  ]);
});

test('a receiver that never answers is timed out (response_code 0) and retried', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/silent', (n) => (n === 0 ? 'hang' : { status: 200 }));
  const hook = await kit.createHook(auth, '/silent');
  const eventId = await kit.emit(orgId, 'workflow.completed');
  const reqs = await kit.receiver.waitFor('/silent', 2);
  expect(reqs.map((r) => r.headers['x-service-event-id'])).toEqual([eventId, eventId]);
  const logs = await waitFor(async () => {
    const l = await kit.logs(auth, hook.id);
    return l.length === 2 ? l : undefined;
  });
  expect(logs[0]).toMatchObject({ attempt: 1, status: 'failed', response_code: 0 });
  expect(logs[0]!.error_message).toMatch(/no answer within 1500 ms/);
  expect(logs[0]!.response_time_ms).toBeGreaterThanOrEqual(1400);
  expect(logs[1]).toMatchObject({ attempt: 2, status: 'success', response_code: 200 });
});

test('three subscribers of which one keeps failing: the other two are delivered without waiting', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/sub-bad', () => ({ status: 500 }));
  const good1 = await kit.createHook(auth, '/sub-a');
  const good2 = await kit.createHook(auth, '/sub-b');
  const bad = await kit.createHook(auth, '/sub-bad', { retry_policy: { max_retries: 10, retry_delay_ms: 2000 } });
  const eventId = await kit.emit(orgId, 'workflow.completed');
  await kit.receiver.waitFor('/sub-a', 1);
  await kit.receiver.waitFor('/sub-b', 1);
  for (const h of [good1, good2]) {
    const logs = await waitFor(async () => {
      const l = await kit.logs(auth, h.id);
      return l.length === 1 ? l : undefined;
    });
    expect(logs[0]).toMatchObject({ event_id: eventId, status: 'success' });
  }
  // The failing one is still retrying while the others are done.
  expect(await workflowStatus(eventId, bad.id)).toBe('RUNNING');
  // Its first attempt's log row is written after the good ones' may be: wait for it, not race it.
  const badLogs = await waitFor(async () => {
    const l = await kit.logs(auth, bad.id);
    return l.length > 0 ? l : undefined;
  });
  expect(badLogs[0]).toMatchObject({ status: 'failed', response_code: 500 });
  await kit.t.request.delete(`/v1/webhooks/${bad.id}`).set(auth).expect(200);
});

test('redeliver sends the same event again as the next attempt', async () => {
  const { orgId, auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/again');
  const eventId = await kit.emit(orgId, 'workflow.completed');
  await kit.receiver.waitFor('/again', 1);
  const [log] = await waitFor(async () => {
    const l = await kit.logs(auth, hook.id);
    return l.length === 1 ? l : undefined;
  });
  const res = await kit.t.request.post(`/v1/webhooks/${hook.id}/logs/${log!.id}/redeliver`).set(auth);
  expect(res.status).toBe(200);
  expect(res.body.data).toMatchObject({ webhook_id: hook.id, event_id: eventId, log_id: log!.id, status: 'queued' });
  const reqs = await kit.receiver.waitFor('/again', 2);
  expect(reqs[1]!.headers['x-service-event-id']).toBe(eventId);
  expect(reqs[1]!.headers['x-service-delivery-attempt']).toBe('2');
  expect(JSON.parse(reqs[1]!.body).metadata.retry_count).toBe(1);
  const logs = await waitFor(async () => {
    const l = await kit.logs(auth, hook.id);
    return l.length === 2 ? l : undefined;
  });
  expect(logs.map((l) => [l.attempt, l.event_id, l.status])).toEqual([
    [1, eventId, 'success'],
    [2, eventId, 'success'],
  ]);
  const missing = await kit.t.request.post(`/v1/webhooks/${hook.id}/logs/whlog_nope/redeliver`).set(auth);
  expect(missing.status).toBe(404);
});

test('POST /test sends one real signed delivery and reports its outcome', async () => {
  const { auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/probe');
  const ok = await kit.t.request.post(`/v1/webhooks/${hook.id}/test`).set(auth).send({ event_type: 'customer.created', test_data: { customer_id: 'cus_1' } });
  expect(ok.status).toBe(200);
  expect(ok.body.data).toMatchObject({ status: 'success', response_code: 200 });
  expect(ok.body.data.test_id).toEqual(expect.any(String));
  expect(ok.body.data.response_time_ms).toEqual(expect.any(Number));
  expect(Date.parse(ok.body.data.tested_at)).not.toBeNaN();
  const [req] = kit.receiver.requestsTo('/probe');
  expect(req!.headers['x-service-signature']).toBe(hexSignature(hook.secret, req!.body));
  expect(JSON.parse(req!.body)).toMatchObject({ id: ok.body.data.test_id, type: 'customer.created', data: { customer_id: 'cus_1' }, metadata: { webhook_id: hook.id, retry_count: 0 } });

  kit.script('/probe', () => ({ status: 500 }));
  const bad = await kit.t.request.post(`/v1/webhooks/${hook.id}/test`).set(auth).send({ event_type: 'customer.created' });
  expect(bad.body.data).toMatchObject({ status: 'failed', response_code: 500 });
  const wrongType = await kit.t.request.post(`/v1/webhooks/${hook.id}/test`).set(auth).send({ event_type: 'nope' });
  expect(wrongType.status).toBe(400);
  expect(wrongType.body.error.code).toBe('INVALID_EVENT_TYPES');
  // Tests are not deliveries of events: the log stays empty.
  expect(await kit.logs(auth, hook.id)).toHaveLength(0);
});
