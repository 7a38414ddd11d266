/**
 * Recover (POST /v1/webhooks/{id}/recover) and the per-endpoint throttle's settings, against
 * a real HTTPS receiver and a real worker: after a consumer outage a recovery redelivers
 * every missed event once (its attempt continuing the count); two recoveries of the same
 * window, at once or one after the other, never deliver an event twice; bad requests are
 * 4xx in the envelope and record nothing.
 */
import { waitFor } from '../../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit();
});
afterAll(async () => {
  await kit?.close();
});

type Recovery = { id: string; status: string; matched: number; started: number; skipped: number; pending: number; delivered: number; failed: number; window: Record<string, unknown> };

const recover = (auth: Record<string, string>, hookId: string, body: object, headers: Record<string, string> = {}) =>
  kit.t.request.post(`/v1/webhooks/${hookId}/recover`).set(auth).set(headers).send(body);
const getRecovery = async (auth: Record<string, string>, hookId: string, id: string): Promise<Recovery> =>
  (await kit.t.request.get(`/v1/webhooks/${hookId}/recoveries/${id}`).set(auth)).body.data;
const recoveryCount = async (hookId: string) =>
  Number((await kit.t.services.orm.em.fork().execute<Array<{ n: string }>>('select count(*) as n from webhook_recoveries where webhook_id = ?', [hookId]))[0]!.n);

test('after an outage a recovery redelivers each missed event once; recoveries of the same window never deliver twice', async () => {
  const { orgId, auth } = await kit.tenant();
  let down = true;
  kit.script('/outage', () => (down ? { status: 503 } : { status: 200 }));
  const hook = await kit.createHook(auth, '/outage', { retry_policy: { max_retries: 0, retry_delay_ms: 100 } });
  const since = new Date(Date.now() - 1000).toISOString();
  const events = [];
  for (let i = 0; i < 4; i++) events.push(await kit.emit(orgId, 'workflow.completed'));
  await waitFor(async () => (await kit.logs(auth, hook.id)).length === 4, 'the outage attempts');
  down = false;

  const first = await recover(auth, hook.id, { since, status: 'failed' }, { 'Idempotency-Key': `recover-${hook.id}` });
  expect(first.status).toBe(202);
  expect(first.body.data).toMatchObject({ id: expect.stringMatching(/^whr_/), webhook_id: hook.id, matched: 4, window: { since, status: 'failed' } });
  // The same key answers the same recovery, and starts no second one.
  const again = await recover(auth, hook.id, { since, status: 'failed' }, { 'Idempotency-Key': `recover-${hook.id}` });
  expect(again.status).toBe(202);
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(again.body.data.id).toBe(first.body.data.id);
  // A second recovery of the same window while the first runs: together they deliver each event once.
  const second = await recover(auth, hook.id, { since });
  expect(second.status).toBe(202);
  expect(second.body.data.matched).toBe(4);

  const [a, b] = await waitFor(async () => {
    const rs = [await getRecovery(auth, hook.id, first.body.data.id), await getRecovery(auth, hook.id, second.body.data.id)];
    return rs.every((r) => r.status === 'completed') && rs[0]!.delivered + rs[1]!.delivered === 4 && rs;
  }, 'both recoveries to complete and deliver');
  expect(a!.started + b!.started).toBe(4);
  expect(a!.skipped + b!.skipped).toBe(4);
  expect({ pending: a!.pending + b!.pending, failed: a!.failed + b!.failed }).toEqual({ pending: 0, failed: 0 });

  // Each event: its failed attempt during the outage, then one recovered delivery as attempt 2.
  const reqs = kit.receiver.requestsTo('/outage');
  for (const id of events) {
    const mine = reqs.filter((r) => r.headers['x-service-event-id'] === id);
    expect(mine.map((r) => r.headers['x-service-delivery-attempt'])).toEqual(['1', '2']);
  }
  const logs = await kit.logs(auth, hook.id, '&status=success');
  expect(logs.map((l) => l.event_id).sort()).toEqual([...events].sort());

  // Once more, later: everything was delivered, nothing is sent again.
  const third = await recover(auth, hook.id, { since });
  expect(third.status).toBe(202);
  const done = await waitFor(async () => {
    const r = await getRecovery(auth, hook.id, third.body.data.id);
    return r.status === 'completed' && r;
  });
  expect(done).toMatchObject({ matched: 4, started: 0, skipped: 4, delivered: 0 });
  expect((await recover(auth, hook.id, { since, status: 'failed' })).body.data.matched).toBe(0);
  expect(kit.receiver.requestsTo('/outage')).toHaveLength(8);
});

test('bad windows, other organizations and inactive webhooks are 4xx in the envelope and record nothing', async () => {
  const { auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/never');
  const now = Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const cases: Array<[object, number, string, string?]> = [
    [{ since: iso(now - 1000), until: iso(now - 2000) }, 400, 'INVALID_DATE_RANGE', 'since'],
    [{ since: iso(now - 1000), until: iso(now - 1000) }, 400, 'INVALID_DATE_RANGE', 'since'],
    [{ since: iso(now - 1000), until: iso(now + 3_600_000) }, 400, 'INVALID_DATE_RANGE', 'until'],
    [{ since: iso(now - 31 * 86_400_000) }, 400, 'INVALID_DATE_RANGE', 'since'],
    [{ since: 'yesterday' }, 400, 'INVALID_REQUEST', 'since'],
    [{ since: iso(now - 1000), status: 'success' }, 400, 'INVALID_REQUEST', 'status'],
    [{ since: iso(now - 1000), extra: true }, 400, 'INVALID_REQUEST', 'extra'],
    [{}, 400, 'MISSING_REQUIRED_FIELD', 'since'],
  ];
  for (const [body, status, code, field] of cases) {
    const res = await recover(auth, hook.id, body);
    expect({ body, status: res.status, code: res.body.error?.code, field: res.body.error?.field }).toEqual({ body, status, code, field });
  }
  const since = iso(now - 60_000);
  const other = await kit.tenant();
  const notYours = await recover(other.auth, hook.id, { since });
  expect(notYours.status).toBe(404);
  expect(notYours.body.error.code).toBe('WEBHOOK_NOT_FOUND');

  const mine = await recover(auth, hook.id, { since });
  expect(mine.status).toBe(202);
  const rid = mine.body.data.id as string;
  expect((await kit.t.request.get(`/v1/webhooks/${hook.id}/recoveries/${rid}`).set(other.auth)).body.error.code).toBe('WEBHOOK_NOT_FOUND');
  expect((await kit.t.request.get(`/v1/webhooks/${hook.id}/recoveries/whr_missing`).set(auth)).body.error.code).toBe('WEBHOOK_RECOVERY_NOT_FOUND');

  expect((await kit.t.request.put(`/v1/webhooks/${hook.id}`).set(auth).send({ active: false })).status).toBe(200);
  const inactive = await recover(auth, hook.id, { since });
  expect(inactive.status).toBe(422);
  expect(inactive.body.error.code).toBe('WEBHOOK_VALIDATION_FAILED');
  expect(await recoveryCount(hook.id)).toBe(1);
});

test('rate_limit: set on create, changed and cleared on update, shown on get; out of range is 400', async () => {
  const { auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/limited', { rate_limit: 5 });
  const get = async () => (await kit.t.request.get(`/v1/webhooks/${hook.id}`).set(auth)).body.data;
  expect(await get()).toMatchObject({ rate_limit: 5 });
  expect((await kit.t.request.put(`/v1/webhooks/${hook.id}`).set(auth).send({ rate_limit: 50 })).body.data.rate_limit).toBe(50);
  expect((await kit.t.request.put(`/v1/webhooks/${hook.id}`).set(auth).send({ name: 'kept' })).body.data.rate_limit).toBe(50);
  expect((await kit.t.request.put(`/v1/webhooks/${hook.id}`).set(auth).send({ rate_limit: null })).body.data.rate_limit).toBeNull();
  for (const rate_limit of [0, 1001, 2.5, '5']) {
    const res = await kit.t.request.put(`/v1/webhooks/${hook.id}`).set(auth).send({ rate_limit });
    expect({ rate_limit, status: res.status, field: res.body.error?.field }).toEqual({ rate_limit, status: 400, field: 'rate_limit' });
  }
  expect((await get()).rate_limit).toBeNull();
  const unthrottled = await kit.createHook(auth, '/unlimited');
  expect(unthrottled).toMatchObject({ rate_limit: null });
});
