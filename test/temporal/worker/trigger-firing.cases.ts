/**
 * Triggers that fire: webhook receiver, api endpoint and schedule triggers (a real
 * Temporal Schedule fired with `handle.trigger()`), each recording a trigger execution
 * linked to a workflow execution run by a real worker.
 */
import { createHmac } from 'node:crypto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { createActivities } from '../../../temporal/activities';
import { triggerScheduleId } from '../../../temporal/triggers.shared';
import { MessageTargetsCache } from '../../../src/modules/inbound/message-targets';
import { EXECUTION_START } from '../../../src/modules/executions/execution.starter';
import { reconcileStarts } from '../../../src/modules/starts/durable-start';
import { resendWhileUnavailable, waitFor } from '../../helpers/wait';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';

const sign = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

describe('trigger firing', () => {
  let t: TestApp;
  let worker: TestWorker;
  let writer: string;
  let reader: string;
  let admin: string;
  let workflowId: string;

  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_INBOUND_WEBHOOK_PER_MINUTE: '3',
      RATE_LIMIT_CREDENTIAL_PER_HOUR: '100000',
      RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '100000',
      RATE_LIMIT_EXECUTION_OPS_PER_HOUR: '100000',
    });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    writer = (await t.createKey('read_write')).key;
    reader = (await t.createKey('read')).key;
    admin = (await t.createKey('admin')).key;
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(writer))
      .send({ name: 'Notify', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Ping' }] } });
    workflowId = wf.body.data.id;
    expect((await t.request.post(`/v1/workflows/${workflowId}/activate`).set(bearer(writer))).status).toBe(200);
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
  });

  const createTrigger = async (body: object) => {
    const res = await t.request.post('/v1/triggers').set(bearer(writer)).send({ workflow_id: workflowId, ...body });
    expect(res.status).toBe(201);
    return res.body.data as { id: string; configuration: Record<string, any>; execution_count: number };
  };
  const finished = async (triggerId: string, teId: string) => {
    const done = async () => {
      const res = await t.request.get(`/v1/triggers/${triggerId}/executions/${teId}`).set(bearer(reader));
      return res.body.data?.status !== 'running' && res.body.data;
    };
    // A start cut off or skipped on a loaded dev server (Temporal briefly taken as down) is the
    // worker's reconciler's to make; this test app runs none, so one pass stands in for it.
    return await waitFor(done, `trigger execution ${teId} to finish`, 10_000).catch(async () => {
      await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 });
      return await waitFor(done, `trigger execution ${teId} to finish`);
    });
  };

  describe('webhook triggers', () => {
    let hook: { id: string; configuration: Record<string, any> };
    let path: string;
    beforeAll(async () => {
      hook = await createTrigger({ name: 'Order hook', type: 'webhook', configuration: { headers: { 'X-Shop': 'acme' } } });
      path = new URL(hook.configuration.url).pathname;
    });

    it('starts an execution with the JSON body as input when signature and headers verify', async () => {
      const body = JSON.stringify({ order_id: 'A-1', message: 'new order' });
      const res = await t.request
        .post(path)
        .set('Content-Type', 'application/json')
        .set('X-Service-Signature', sign(hook.configuration.secret, body))
        .set('X-Shop', 'acme')
        .set('User-Agent', 'shop-bot/1.0')
        .send(body);
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({
        id: expect.stringMatching(/^trgexec_/),
        trigger_id: hook.id,
        workflow_id: workflowId,
        input: { order_id: 'A-1', message: 'new order', channel: 'whatsapp' },
        output: { workflow_execution_id: expect.stringMatching(/^exec_/) },
      });
      const detail = await finished(hook.id, res.body.data.id);
      expect(detail).toMatchObject({
        status: 'success',
        completed_at: expect.any(String),
        duration_ms: expect.any(Number),
        input: { order_id: 'A-1', metadata: { user_agent: 'shop-bot/1.0', timestamp: res.body.data.triggered_at } },
        output: { workflow_execution_id: res.body.data.output.workflow_execution_id, workflow_status: 'success' },
        error: null,
      });
      const [exec] = await t.query<{ trigger_id: string; input: Record<string, unknown> }>('select trigger_id, input from executions where id = ?', [
        res.body.data.output.workflow_execution_id,
      ]);
      expect(exec).toMatchObject({ trigger_id: hook.id, input: { order_id: 'A-1', message: 'new order' } });
      const got = await t.request.get(`/v1/triggers/${hook.id}`).set(bearer(reader));
      expect(got.body.data.execution_count).toBe(1);
      expect(got.body.data.last_triggered).toBe(res.body.data.triggered_at);
      const events = await t.query<{ data: Record<string, unknown> }>("select data from events where type = 'trigger.activated' and data->>'trigger_id' = ?", [hook.id]);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toMatchObject({ trigger_id: hook.id, trigger_execution_id: res.body.data.id, workflow_id: workflowId, trigger_type: 'webhook' });
    });

    it('refuses bad signatures, missing headers and other methods, recording nothing', async () => {
      const count = async () => (await t.query<{ n: number }>('select count(*)::int as n from trigger_executions where trigger_id = ?', [hook.id]))[0]!.n;
      const before = await count();
      const body = JSON.stringify({ a: 1 });
      const noSig = await t.request.post(path).set('Content-Type', 'application/json').set('X-Shop', 'acme').send(body);
      expect(noSig.status).toBe(401);
      expect(noSig.body.error.code).toBe('INVALID_SIGNATURE');
      const wrongSig = await t.request
        .post(path)
        .set('Content-Type', 'application/json')
        .set('X-Service-Signature', sign('another-secret-of-enough-length', body))
        .set('X-Shop', 'acme')
        .send(body);
      expect(wrongSig.status).toBe(401);
      const tampered = await t.request
        .post(path)
        .set('Content-Type', 'application/json')
        .set('X-Service-Signature', sign(hook.configuration.secret, body))
        .set('X-Shop', 'acme')
        .send(JSON.stringify({ a: 2 }));
      expect(tampered.status).toBe(401);
      const noHeader = await t.request.post(path).set('Content-Type', 'application/json').set('X-Service-Signature', sign(hook.configuration.secret, body)).send(body);
      expect(noHeader.status).toBe(401);
      expect(noHeader.body.error.code).toBe('INVALID_HEADER');
      const wrongHeader = await t.request
        .post(path)
        .set('Content-Type', 'application/json')
        .set('X-Service-Signature', sign(hook.configuration.secret, body))
        .set('X-Shop', 'other')
        .send(body);
      expect(wrongHeader.status).toBe(401);
      const put = await t.request.put(path).set('Content-Type', 'application/json').send(body);
      expect(put.status).toBe(405);
      expect(put.headers.allow).toBe('POST');
      const text = await t.request.post(path).set('Content-Type', 'text/plain').send('hello');
      expect(text.status).toBe(415);
      const unknown = await t.request.post('/hooks/triggers/trg_unknown').set('Content-Type', 'application/json').send(body);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('TRIGGER_NOT_FOUND');
      const array = JSON.stringify([1, 2]);
      const arr = await t.request.post(path).set('Content-Type', 'application/json').set('X-Service-Signature', sign(hook.configuration.secret, array)).set('X-Shop', 'acme').send(array);
      expect(arr.status).toBe(400);
      expect(await count()).toBe(before);
    });

    it('limits verified calls per trigger per minute with 429 and retry_after', async () => {
      const limited = await createTrigger({ name: 'Limited hook', type: 'webhook', configuration: {} });
      const p = new URL(limited.configuration.url).pathname;
      const body = JSON.stringify({ n: 1 });
      const call = () => t.request.post(p).set('Content-Type', 'application/json').set('X-Service-Signature', sign(limited.configuration.secret, body)).send(body);
      for (let i = 0; i < 3; i++) expect((await call()).status).toBe(202);
      const res = await call();
      expect(res.status).toBe(429);
      expect(res.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: expect.any(Number) });
      expect(res.headers['x-ratelimit-limit']).toBe('3');
      const got = await t.request.get(`/v1/triggers/${limited.id}`).set(bearer(reader));
      expect(got.body.data.execution_count).toBe(3);
    });

    it('does not fire a paused trigger, and records a failed firing when the workflow is inactive', async () => {
      const h = await createTrigger({ name: 'Pausable hook', type: 'webhook', configuration: {} });
      const p = new URL(h.configuration.url).pathname;
      const body = JSON.stringify({ x: 1 });
      const call = () => t.request.post(p).set('Content-Type', 'application/json').set('X-Service-Signature', sign(h.configuration.secret, body)).send(body);
      await t.request.post(`/v1/triggers/${h.id}/pause`).set(bearer(writer));
      const paused = await call();
      expect(paused.status).toBe(409);
      expect(paused.body.error.code).toBe('TRIGGER_NOT_ACTIVE');
      expect((await t.request.get(`/v1/triggers/${h.id}/executions`).set(bearer(reader))).body.pagination.total).toBe(0);

      await t.request.post(`/v1/triggers/${h.id}/resume`).set(bearer(writer));
      const wf = await t.request.post('/v1/workflows').set(bearer(writer)).send({ name: 'Dormant', channel: 'voice', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x' }] } });
      const dormant = await createTrigger({ name: 'Dormant hook', type: 'webhook', workflow_id: wf.body.data.id, configuration: {} });
      const dp = new URL(dormant.configuration.url).pathname;
      const res = await t.request.post(dp).set('Content-Type', 'application/json').set('X-Service-Signature', sign(dormant.configuration.secret, body)).send(body);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('WORKFLOW_NOT_ACTIVE');
      const list = await t.request.get(`/v1/triggers/${dormant.id}/executions`).set(bearer(reader));
      expect(list.body.data).toHaveLength(1);
      expect(list.body.data[0]).toMatchObject({ status: 'failed', output: { workflow_execution_id: null }, completed_at: expect.any(String), duration_ms: expect.any(Number) });
      const detail = await t.request.get(`/v1/triggers/${dormant.id}/executions/${list.body.data[0].id}`).set(bearer(reader));
      expect(detail.body.data.error).toMatchObject({ code: 'WORKFLOW_NOT_ACTIVE', message: expect.stringContaining('not active') });
      expect((await t.query('select id from executions where trigger_id = ?', [dormant.id])).length).toBe(0);
    });
  });

  describe('api triggers', () => {
    it('starts an execution with the posted input, authenticated and limited to rate_limit per hour', async () => {
      const api = await createTrigger({ name: 'Api fire', type: 'api', configuration: { rate_limit: 3 } });
      const endpoint = api.configuration.endpoint as string;
      const res = await t.request.post(endpoint).set(bearer(writer)).send({ message: 'from CRM', ticket: 7 });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ trigger_id: api.id, input: { message: 'from CRM', ticket: 7 }, output: { workflow_execution_id: expect.stringMatching(/^exec_/) } });
      await finished(api.id, res.body.data.id);

      expect((await t.request.post(endpoint).send({})).status).toBe(401);
      expect((await t.request.post(endpoint).set(bearer(reader)).send({})).status).toBe(403);
      const otherOrg = (await t.createKey('admin', await t.createOrg())).key;
      const foreign = await t.request.post(endpoint).set(bearer(otherOrg)).send({});
      expect(foreign.status).toBe(404);
      // A body refused by validation is counted like by every limit (the route's one check runs first).
      const notObject = await t.request.post(endpoint).set(bearer(writer)).send([1]);
      expect(notObject.status).toBe(400);

      expect((await t.request.post(endpoint).set(bearer(admin)).send({ n: 2 })).status).toBe(201);
      const limited = await t.request.post(endpoint).set(bearer(writer)).send({ n: 3 });
      expect(limited.status).toBe(429);
      expect(limited.body.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', retry_after: expect.any(Number) });
      expect(limited.headers['x-ratelimit-limit']).toBe('3');
      const got = await t.request.get(`/v1/triggers/${api.id}`).set(bearer(reader));
      expect(got.body.data.execution_count).toBe(2);
    });

    it('is not an endpoint of other trigger types', async () => {
      const msg = await createTrigger({ name: 'Not api', type: 'message', configuration: { keywords: ['x'] } });
      const res = await t.request.post(`/v1/triggers/${msg.id}/fire`).set(bearer(writer)).send({});
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('TRIGGER_NOT_FOUND');
    });
  });

  describe('schedule triggers', () => {
    it('keeps a Temporal Schedule in step with the trigger and fires it end to end', async () => {
      const sched = await createTrigger({
        name: 'Nightly',
        type: 'schedule',
        configuration: { cron_expression: '0 3 * * *', timezone: 'Europe/Paris', start_date: '2030-01-01T00:00:00Z', end_date: '2031-01-01T00:00:00Z' },
      });
      const handle = t.services.temporal.client.schedule.getHandle(triggerScheduleId(sched.id));
      let desc = await handle.describe();
      expect(desc.spec.timezone).toBe('Europe/Paris');
      expect(desc.spec.startAt?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
      expect(desc.spec.endAt?.toISOString()).toBe('2031-01-01T00:00:00.000Z');
      expect(desc.state.paused).toBe(false);
      expect(desc.action.type).toBe('startWorkflow');
      expect(desc.memo).toMatchObject({ trigger_name: 'Nightly', workflow_name: 'Notify' });

      expect((await resendWhileUnavailable(() => t.request.post(`/v1/triggers/${sched.id}/pause`).set(bearer(writer)))).status).toBe(200);
      expect((await handle.describe()).state.paused).toBe(true);
      expect((await resendWhileUnavailable(() => t.request.post(`/v1/triggers/${sched.id}/resume`).set(bearer(writer)))).status).toBe(200);
      expect((await handle.describe()).state.paused).toBe(false);
      expect((await resendWhileUnavailable(() => t.request.post(`/v1/triggers/${sched.id}/deactivate`).set(bearer(writer)))).status).toBe(200);
      expect((await handle.describe()).state.paused).toBe(true);
      expect((await resendWhileUnavailable(() => t.request.post(`/v1/triggers/${sched.id}/activate`).set(bearer(writer)))).status).toBe(200);
      expect((await handle.describe()).state.paused).toBe(false);

      const put = await resendWhileUnavailable(() =>
        t.request.put(`/v1/triggers/${sched.id}`).set(bearer(writer)).send({ configuration: { cron_expression: '*/15 9-17 * * 1-5', timezone: 'America/New_York' } }),
      );
      expect(put.status).toBe(200);
      desc = await handle.describe();
      expect(desc.spec.timezone).toBe('America/New_York');
      expect(desc.spec.startAt).toBeUndefined();

      // The real cron would fire hours from now: fire it now.
      await handle.trigger();
      const row = await waitFor(async () => {
        const list = await t.request.get(`/v1/triggers/${sched.id}/executions`).set(bearer(reader));
        return list.body.data[0];
      }, 'the scheduled firing');
      expect(row.output.workflow_execution_id).toMatch(/^exec_/);
      const detail = await finished(sched.id, row.id);
      expect(detail).toMatchObject({ status: 'success', input: { metadata: { source: 'schedule' } }, output: { workflow_status: 'success' } });
      const [exec] = await t.query<{ trigger_id: string; status: string }>('select trigger_id, status from executions where id = ?', [row.output.workflow_execution_id]);
      expect(exec).toEqual({ trigger_id: sched.id, status: 'success' });
      expect((await t.request.get(`/v1/triggers/${sched.id}`).set(bearer(reader))).body.data.execution_count).toBe(1);

      const del = await t.request.delete(`/v1/triggers/${sched.id}`).set(bearer(admin));
      expect(del.status).toBe(200);
      await expect(handle.describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    });

    it('creates the schedule paused-free only for valid specs and leaves nothing behind on a refused create', async () => {
      const before = (await t.query<{ n: number }>('select count(*)::int as n from triggers'))[0]!.n;
      const res = await t.request
        .post('/v1/triggers')
        .set(bearer(writer))
        .send({ name: 'Bad tz', type: 'schedule', workflow_id: workflowId, configuration: { cron_expression: '0 0 * * *', timezone: 'Not/AZone' } });
      expect(res.status).toBe(400);
      expect((await t.query<{ n: number }>('select count(*)::int as n from triggers'))[0]!.n).toBe(before);
    });
  });

  describe('message trigger matching', () => {
    it('finds active message triggers of active workflows by keyword, channel and language', async () => {
      const org = await t.createOrg();
      const key = (await t.createKey('admin', org)).key;
      const mkWf = async (name: string, activate: boolean) => {
        const wf = await t.request.post('/v1/workflows').set(bearer(key)).send({ name, channel: 'whatsapp', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x' }] } });
        if (activate) await t.request.post(`/v1/workflows/${wf.body.data.id}/activate`).set(bearer(key));
        return wf.body.data.id as string;
      };
      const live = await mkWf('live', true);
      const off = await mkWf('off', false);
      const mk = async (name: string, workflow_id: string, configuration: object, channel = 'whatsapp') =>
        (await t.request.post('/v1/triggers').set(bearer(key)).send({ name, type: 'message', workflow_id, channel, configuration })).body.data.id as string;
      const match = await mk('match', live, { keywords: ['hello'], language: 'en' });
      await mk('other channel', live, { keywords: ['hello'], channel: 'instagram' });
      const viaConfigChannel = await mk('config channel', live, { keywords: ['hello'], channel: 'whatsapp' }, 'voice');
      await mk('french', live, { keywords: ['hello'], language: 'fr' });
      await mk('inactive workflow', off, { keywords: ['hello'] });
      const paused = await mk('paused', live, { keywords: ['hello'] });
      await t.request.post(`/v1/triggers/${paused}/pause`).set(bearer(key));
      await mk('exact', live, { keywords: ['hello'], exact_match: true });

      const read = (organizationId: string, message: string, language?: string) =>
        new MessageTargetsCache(t.services.hotPool).targets(organizationId, { channel: 'whatsapp', customer_id: 'someone', message }, language);
      const found = (await read(org, 'well hello there', 'en')).triggers;
      expect(found).toEqual([
        { triggerId: match, workflowId: live },
        { triggerId: viaConfigChannel, workflowId: live },
      ]);
      expect((await read(await t.createOrg(), 'hello')).triggers).toEqual([]);
    });
  });

  describe('reading firings', () => {
    it('filters executions by status and date and reports metrics per granularity', async () => {
      const api = await createTrigger({ name: 'Metrics api', type: 'api', configuration: {} });
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await t.request.post(api.configuration.endpoint).set(bearer(writer)).send({ i });
        ids.push(r.body.data.id);
      }
      for (const id of ids) await finished(api.id, id);
      const success = await t.request.get(`/v1/triggers/${api.id}/executions?status=success`).set(bearer(reader));
      expect(success.body.pagination.total).toBe(2);
      expect((await t.request.get(`/v1/triggers/${api.id}/executions?status=failed`).set(bearer(reader))).body.data).toEqual([]);
      const future = await t.request.get(`/v1/triggers/${api.id}/executions?start_date=2099-01-01`).set(bearer(reader));
      expect(future.body.pagination.total).toBe(0);
      // Days and hours expected from the instants the server recorded (the firings may straddle an hour or a day).
      const triggeredAt = ((await t.request.get(`/v1/triggers/${api.id}/executions`).set(bearer(reader))).body.data as Array<{ triggered_at: string }>).map((f) => f.triggered_at);
      expect(triggeredAt).toHaveLength(2);
      const perBucket = (width: number, suffix: string) => {
        const counts = new Map<string, number>();
        for (const at of triggeredAt) counts.set(at.slice(0, width) + suffix, (counts.get(at.slice(0, width) + suffix) ?? 0) + 1);
        return [...counts].sort();
      };
      const [day, onDay] = perBucket(10, '')[0]!;
      const byDay = await t.request.get(`/v1/triggers/${api.id}/executions?start_date=${day}&end_date=${day}T23:59:59Z`).set(bearer(reader));
      expect(byDay.body.pagination.total).toBe(onDay);

      const metrics = await t.request.get(`/v1/triggers/${api.id}/metrics?granularity=hour`).set(bearer(reader));
      expect(metrics.status).toBe(200);
      expect(metrics.body.data.metrics).toMatchObject({
        total_executions: 2,
        successful_executions: 2,
        failed_executions: 0,
        success_rate: 1,
        unique_customers: 0,
        channel_breakdown: { whatsapp: 2 },
      });
      // Every hour of the default 30-day period is a bucket; only the firings' ones have any.
      const hours = metrics.body.data.daily_metrics as Array<{ date: string; executions: number; success_rate: number }>;
      expect(hours.length).toBeGreaterThanOrEqual(720);
      const busyHours = hours.filter((b) => b.executions > 0);
      expect(busyHours.map((b) => [b.date, b.executions])).toEqual(perBucket(13, ':00:00Z'));
      expect(busyHours.map((b) => b.success_rate)).toEqual(busyHours.map(() => 1));
      const daily = await t.request.get(`/v1/triggers/${api.id}/metrics?granularity=day`).set(bearer(reader));
      const busyDays = (daily.body.data.daily_metrics as Array<{ date: string; executions: number }>).filter((b) => b.executions > 0);
      expect(busyDays.map((b) => [b.date, b.executions])).toEqual(perBucket(10, ''));
    });
  });
});
