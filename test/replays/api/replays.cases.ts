/**
 * Bulk replays through the HTTP API with a real worker: filters (workflow, trigger, status,
 * error type, dates, named ids), validation and tenancy, the rate (timers between batches),
 * cancel, and the replay.completed event.
 */
import { createActivities } from '../../../temporal/activities';
import { replayWorkflowId } from '../../../temporal/replays.shared';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { waitFor } from '../../helpers/wait';
import { cancelledExecutions, createFormWorkflow, retriesOf, waitForReplay } from '../helpers';

describe('bulk replays', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let reader: string;

  beforeAll(async () => {
    t = await createTestApp();
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
    reader = (await t.createKey('read')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
  });

  const create = (body: object, k = key) => t.request.post('/v1/replays').set(bearer(k)).send(body);
  const completed = (id: string) => waitForReplay(t, reader, id, (r) => r.status === 'completed', 'completed');

  it('filters pick exactly the matching executions; each gets one retry linked by retry_of; replay.completed reports the counts', async () => {
    const a = await createFormWorkflow(t, key, 'alpha');
    const b = await createFormWorkflow(t, key, 'beta', false);
    const trigger = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'Beta', type: 'message', workflow_id: b, channel: 'whatsapp', configuration: { keywords: ['beta'] } });
    expect(trigger.status).toBe(201);
    const triggerId = trigger.body.data.id as string;

    const [a1, a2, a3, a4] = (await cancelledExecutions(t, key, a, 'alpha', 4)) as [string, string, string, string];
    const [b1, b2] = (await cancelledExecutions(t, key, b, 'beta', 2)) as [string, string];
    const running = (await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'alpha-run', message: 'alpha' })).body
      .data.executions[0].id as string;
    // Recorded history: two failures of different types, and one old cancellation.
    await t.query(`update executions set status = 'failed', error_type = 'api_error' where id = ?`, [a1]);
    await t.query(`update executions set status = 'failed', error_type = 'timeout' where id = ?`, [a2]);
    await t.query(`update executions set started_at = now() - interval '3 days' where id = ?`, [a4]);

    const byError = await create({ filter: { workflow_id: a, status: 'failed', error_type: 'api_error' } });
    expect(byError.status).toBe(201);
    expect(byError.body.data).toMatchObject({
      id: expect.stringMatching(/^rpl_/),
      status: 'running',
      rate_per_second: 5,
      revision: 'current',
      matched: 1,
      filter: { workflow_id: a, status: 'failed', error_type: 'api_error' },
    });
    const r1 = await completed(byError.body.data.id);
    expect(r1).toMatchObject({ matched: 1, started: 1, skipped: 0, failed: 0, failures: [] });
    expect(await retriesOf(t, [a1, a2, a3, a4])).toEqual(new Map([[a1, 1]]));
    const retry = await t.query<{ retry_of: string; status: string; workflow_id: string }>('select retry_of, status, workflow_id from executions where retry_of = ?', [a1]);
    expect(retry).toEqual([{ retry_of: a1, status: 'running', workflow_id: a }]);

    // Date window: the old cancellation, the running execution and the retry just started stay out.
    const since = new Date(Date.now() - 24 * 3600_000).toISOString();
    const byDate = await create({ filter: { workflow_id: a, start_date: since }, rate_per_second: 100 });
    expect(byDate.body.data.matched).toBe(3);
    expect(await completed(byDate.body.data.id)).toMatchObject({ matched: 3, started: 3 });
    expect(await retriesOf(t, [a1, a2, a3, a4, running])).toEqual(new Map([[a1, 2], [a2, 1], [a3, 1]]));

    const byTrigger = await create({ filter: { trigger_id: triggerId, status: 'cancelled' } });
    expect(await completed(byTrigger.body.data.id)).toMatchObject({ matched: 2, started: 2 });
    expect(await retriesOf(t, [b1, b2])).toEqual(new Map([[b1, 1], [b2, 1]]));

    // Named ids: any status matches; the running one is skipped.
    const byIds = await create({ filter: { execution_ids: [a4, running] } });
    const r4 = await completed(byIds.body.data.id);
    expect(r4).toMatchObject({ matched: 2, started: 1, skipped: 1, failed: 0, filter: { execution_ids_count: 2 } });
    expect(await retriesOf(t, [a4, running])).toEqual(new Map([[a4, 1]]));

    // A workflow deactivated since: its retries are refused with the single retry's reason.
    const deactivated = await t.request.post(`/v1/workflows/${b}/deactivate`).set(bearer(key));
    expect(deactivated.status).toBe(200);
    const refused = await create({ filter: { workflow_id: b, status: 'cancelled' } });
    const r5 = await completed(refused.body.data.id);
    expect(r5).toMatchObject({ matched: 2, started: 0, failed: 2 });
    expect(r5.failures).toEqual(
      [b1, b2].sort().map((id) => ({ execution_id: id, code: 'WORKFLOW_NOT_ACTIVE', message: expect.stringContaining('not active') })),
    );

    const events = await t.query<{ data: Record<string, unknown> }>(`select data from events where type = 'replay.completed' and data->>'replay_id' = ?`, [byIds.body.data.id]);
    expect(events.map((e) => e.data)).toEqual([{ replay_id: byIds.body.data.id, status: 'completed', matched: 2, started: 1, skipped: 1, failed: 0 }]);

    const list = await t.request.get('/v1/replays?limit=2').set(bearer(reader));
    expect(list.status).toBe(200);
    expect(list.body.pagination).toEqual({ page: 1, limit: 2, total: 5, pages: 3 });
    expect(list.body.data.map((r: { id: string }) => r.id)).toEqual([refused.body.data.id, byIds.body.data.id]);
  });

  it('refuses bad input with a clear 4xx and records nothing; another organization sees none of it', async () => {
    const a = await createFormWorkflow(t, key, 'gamma');
    const [g1] = (await cancelledExecutions(t, key, a, 'gamma', 1)) as [string];
    const before = await t.query('select id from replays');
    const cases: Array<[object, number, string, string]> = [
      [{ filter: {} }, 400, 'INVALID_REQUEST', 'filter'],
      [{}, 400, 'MISSING_REQUIRED_FIELD', 'filter'],
      [{ filter: { workflow_id: a }, rate_per_second: 0 }, 400, 'INVALID_REQUEST', 'rate_per_second'],
      [{ filter: { workflow_id: a }, rate_per_second: 101 }, 400, 'INVALID_REQUEST', 'rate_per_second'],
      [{ filter: { workflow_id: a }, revision: 'draft' }, 400, 'INVALID_REQUEST', 'revision'],
      [{ filter: { workflow_id: a, status: 'success' } }, 400, 'INVALID_REQUEST', 'filter.status'],
      [{ filter: { execution_ids: Array.from({ length: 10_001 }, (_, i) => `exec_${i}`) } }, 400, 'INVALID_REQUEST', 'filter.execution_ids'],
      [{ filter: { workflow_id: a, start_date: '2026-11-20', end_date: '2026-11-10' } }, 400, 'INVALID_DATE_RANGE', 'end_date'], // the contract names `end_date` for this code
      [{ filter: { workflow_id: 'wf_missing' } }, 404, 'WORKFLOW_NOT_FOUND', 'filter.workflow_id'],
      [{ filter: { trigger_id: 'trg_missing' } }, 404, 'TRIGGER_NOT_FOUND', 'filter.trigger_id'],
      [{ filter: { execution_ids: [g1, 'exec_missing'] } }, 404, 'EXECUTION_NOT_FOUND', 'filter.execution_ids'],
    ];
    for (const [body, status, code, field] of cases) {
      const res = await create(body);
      expect({ body, status: res.status, code: res.body.error?.code, field: res.body.error?.field }).toEqual({ body, status, code, field });
    }
    expect(await t.query('select id from replays')).toEqual(before);
    expect((await t.request.post('/v1/replays').set(bearer(reader)).send({ filter: { workflow_id: a } })).status).toBe(403);

    const mine = await create({ filter: { execution_ids: [g1] } });
    expect(mine.status).toBe(201);
    // One execution operation: the same hourly bucket as the single retry (the tighter limit, so the one reported).
    expect(mine.headers['x-ratelimit-limit']).toBe(String(t.config.RATE_LIMIT_EXECUTION_OPS_PER_HOUR));
    const single = await t.request.post(`/v1/workflows/${a}/executions/${g1}/retry`).set(bearer(key));
    expect(single.status).toBe(201);
    expect(Number(single.headers['x-ratelimit-remaining'])).toBe(Number(mine.headers['x-ratelimit-remaining']) - 1);
    const other = (await t.createKey('admin', await t.createOrg())).key;
    expect((await create({ filter: { workflow_id: a } }, other)).body.error.code).toBe('WORKFLOW_NOT_FOUND');
    expect((await create({ filter: { execution_ids: [g1] } }, other)).body.error.code).toBe('EXECUTION_NOT_FOUND');
    expect((await t.request.get(`/v1/replays/${mine.body.data.id}`).set(bearer(other))).status).toBe(404);
    const foreignCancel = await t.request.post(`/v1/replays/${mine.body.data.id}/cancel`).set(bearer(other));
    expect([foreignCancel.status, foreignCancel.body.error.code]).toEqual([404, 'REPLAY_NOT_FOUND']);
    expect((await t.request.get('/v1/replays').set(bearer(other))).body.pagination.total).toBe(0);
    await completed(mine.body.data.id);
  });

  it('holds the rate: batches of rate_per_second executions with a one-second timer between them', async () => {
    const a = await createFormWorkflow(t, key, 'delta');
    const originals = await cancelledExecutions(t, key, a, 'delta', 5);
    const res = await create({ filter: { workflow_id: a }, rate_per_second: 2 });
    expect(res.body.data).toMatchObject({ matched: 5, rate_per_second: 2 });
    await completed(res.body.data.id);
    expect(await retriesOf(t, originals)).toEqual(new Map(originals.map((id) => [id, 1])));

    // Batches 2, 2, 1: two 1 s timers, and no retry starts less than a second after the one two places before it.
    const history = await t.services.temporal.client.workflow.getHandle(replayWorkflowId(res.body.data.id)).fetchHistory();
    const timers = (history.events ?? []).filter((e) => e.timerStartedEventAttributes).map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds));
    expect(timers).toEqual([1, 1]);
    const started = await t.query<{ ms: number }>(
      `select extract(epoch from started_at) * 1000 as ms from executions where retry_of in (select jsonb_array_elements_text(?::jsonb)) order by started_at`,
      [JSON.stringify(originals)],
    );
    expect(started).toHaveLength(5);
    for (let i = 2; i < started.length; i++) expect(Number(started[i]!.ms) - Number(started[i - 2]!.ms)).toBeGreaterThanOrEqual(1000);
  });

  it('cancel stops a running replay: no retry starts afterwards, a second cancel is a conflict, replay.completed says cancelled', async () => {
    const a = await createFormWorkflow(t, key, 'epsilon');
    const originals = await cancelledExecutions(t, key, a, 'epsilon', 10);
    const res = await create({ filter: { workflow_id: a }, rate_per_second: 1 });
    const id = res.body.data.id as string;
    await waitForReplay(t, reader, id, (r) => r.started >= 1, 'to start a retry');

    const cancelled = await t.request.post(`/v1/replays/${id}/cancel`).set(bearer(key));
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ id, status: 'cancelled', completed_at: expect.any(String) });
    const again = await t.request.post(`/v1/replays/${id}/cancel`).set(bearer(key));
    expect([again.status, again.body.error.code]).toEqual([409, 'REPLAY_NOT_RUNNING']);

    const handle = t.services.temporal.client.workflow.getHandle(replayWorkflowId(id));
    await waitFor(async () => ((await handle.describe()).status.name !== 'RUNNING' ? true : undefined), 'the replay workflow to close');
    const final = (await t.request.get(`/v1/replays/${id}`).set(bearer(reader))).body.data;
    const retried = await retriesOf(t, originals);
    expect(final.status).toBe('cancelled');
    expect(final.started).toBeLessThan(10);
    // At most the item in flight when the cancel landed follows the counted ones.
    expect([...retried.values()].reduce((s, n) => s + n, 0)).toBe(final.started);
    const events = await t.query<{ data: { status: string } }>(`select data from events where type = 'replay.completed' and data->>'replay_id' = ?`, [id]);
    expect(events.map((e) => e.data.status)).toEqual(['cancelled']);
  });
});
