/**
 * /v1/analytics/* through HTTP on a hand-built fixture (rows inserted directly; the rollup
 * triggers count them as they would count real executions). Every expected number is
 * worked out by hand in the comments next to the fixture.
 */
import http from 'node:http';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const config = {
  trigger: { type: 'keyword', keywords: ['hello'] },
  nodes: [
    { id: 'greet', type: 'message', content: 'Hi!', next: 'ask' },
    {
      id: 'ask',
      type: 'form',
      fields: [
        { name: 'score', type: 'rating', required: true, label: 'Rate us 1-5' },
        { name: 'recommend', type: 'nps', required: true, label: 'Recommend us 0-10?' },
      ],
      next: 'bye',
    },
    { id: 'bye', type: 'message', content: 'Thanks' },
  ],
};

describe('analytics API', () => {
  let t: TestApp;
  let admin: string;
  let reader: string;
  let org: string;
  let wf: string;
  let pct: string;
  const seq = { n: 0 };
  const id = (p: string) => `${p}_fx${String(++seq.n).padStart(4, '0')}`;

  const customer = async (ch: string, firstSeen: string) => {
    const c = id('cus');
    await t.query(`insert into customers (id, organization_id, channel, external_id, first_seen_at) values (?, ?, ?, ?, ?)`, [c, org, ch, c, firstSeen]);
    return c;
  };
  const exec = async (e: {
    customer: string;
    channel?: string;
    status: string;
    started: string;
    duration?: number;
    error?: string;
    trigger?: string;
    message?: string;
    workflow?: string;
  }) => {
    const x = id('exec');
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, trigger_id, customer_id, channel, status, started_at, completed_at, duration_ms,
                               error_type, message_id, temporal_started_at)
       values (?, ?, ?, 1, ?, ?, ?, ?, ?::timestamptz, ?::timestamptz + (? * interval '1 millisecond'), ?, ?, ?, now())`,
      [
        x,
        org,
        e.workflow ?? wf,
        e.trigger ?? null,
        e.customer,
        e.channel ?? 'whatsapp',
        e.status,
        e.started,
        e.status === 'running' ? null : e.started,
        e.duration ?? 0,
        e.status === 'running' ? null : (e.duration ?? 0),
        e.error ?? null,
        e.message ?? null,
      ],
    );
    return x;
  };
  const step = (execution: string, node: string, type: string, status: string, duration: number, output: object = {}) =>
    t.query(
      `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, duration_ms, output)
       select ?, id, organization_id, ?, ?, ?, started_at, ?, ?::jsonb from executions where id = ?`,
      [id('step'), node, type, status, duration, JSON.stringify(output), execution],
    );
  const msg = async (m: { customer: string; channel?: string; dir: 'inbound' | 'outbound'; at: string; execution?: string; reply?: boolean }) => {
    const x = id('msg');
    await t.query(
      `insert into messages (id, organization_id, customer_id, channel, direction, text, execution_id, reply_to_wait, created_at)
       values (?, ?, ?, ?, ?, 'x', ?, ?, ?)`,
      [x, org, m.customer, m.channel ?? 'whatsapp', m.dir, m.execution ?? null, m.reply ? `wait-${x}` : null, m.at],
    );
    return x;
  };
  /** An opening message that started `execution` (linked both ways, as POST /v1/messages does). */
  const opening = async (customer: string, at: string, channel = 'whatsapp') => msg({ customer, channel, dir: 'inbound', at });
  const link = (message: string, execution: string) =>
    Promise.all([
      t.query('update messages set execution_id = ? where id = ?', [execution, message]),
      t.query('update executions set message_id = ? where id = ?', [message, execution]),
    ]);

  beforeAll(async () => {
    t = await createTestApp({ ANALYTICS_STREAM_INTERVAL_MS: '200' });
    const a = await t.createKey('admin');
    admin = a.key;
    org = a.organizationId;
    reader = (await t.createKey('read', org)).key;
    const created = await t.request.post('/v1/workflows').set(bearer(admin)).send({ name: 'Survey', channel: 'whatsapp', configuration: config });
    expect(created.status).toBe(201);
    wf = created.body.data.id;
    expect((await t.request.post(`/v1/workflows/${wf}/activate`).set(bearer(admin))).status).toBe(200);
    pct = (await t.request.post('/v1/workflows').set(bearer(admin)).send({ name: 'Latency', channel: 'voice' })).body.data.id;

    // Customers: c1 first seen in the previous period (returning), c2..c5 new.
    const c1 = await customer('whatsapp', '2026-10-03T11:59:00Z');
    const c2 = await customer('whatsapp', '2026-10-05T09:19:00Z');
    const c3 = await customer('instagram', '2026-10-06T14:29:00Z');
    const c4 = await customer('whatsapp', '2026-10-07T07:59:30Z');
    const c5 = await customer('whatsapp', '2026-10-07T12:00:00Z');
    await t.request.put(`/v1/customers/${c2}`).set(bearer(admin)).send({ tags: ['vip'] }).expect(200);

    // Previous period [10-02, 10-05): one success of 1000 ms for c1.
    const m0 = await opening(c1, '2026-10-03T11:59:00Z');
    await link(m0, await exec({ customer: c1, status: 'success', started: '2026-10-03T12:00:00Z', duration: 1000 }));

    // e1: c1, success 130 s, rating 5, nps 10.
    const m1 = await opening(c1, '2026-10-05T09:09:00Z');
    const e1 = await exec({ customer: c1, status: 'success', started: '2026-10-05T09:10:00Z', duration: 130_000 });
    await link(m1, e1);
    await step(e1, 'greet', 'message', 'completed', 10);
    await step(e1, 'ask', 'form', 'completed', 30_000, { scores: { rating: [5], nps: [10] } });
    await step(e1, 'bye', 'message', 'completed', 5);
    await msg({ customer: c1, dir: 'outbound', at: '2026-10-05T09:10:01Z', execution: e1 });
    await msg({ customer: c1, dir: 'outbound', at: '2026-10-05T09:10:02Z', execution: e1 });
    await msg({ customer: c1, dir: 'inbound', at: '2026-10-05T09:12:00Z', execution: e1, reply: true });
    await msg({ customer: c1, dir: 'outbound', at: '2026-10-05T09:12:01Z', execution: e1 });

    // e2: c2, success 70 s, rating 3, nps 9.
    const m2 = await opening(c2, '2026-10-05T09:19:00Z');
    const e2 = await exec({ customer: c2, status: 'success', started: '2026-10-05T09:20:00Z', duration: 70_000 });
    await link(m2, e2);
    await step(e2, 'greet', 'message', 'completed', 10);
    await step(e2, 'ask', 'form', 'completed', 60_000, { scores: { rating: [3], nps: [9] } });
    await step(e2, 'bye', 'message', 'completed', 5);
    await msg({ customer: c2, dir: 'outbound', at: '2026-10-05T09:20:01Z', execution: e2 });
    await msg({ customer: c2, dir: 'outbound', at: '2026-10-05T09:20:02Z', execution: e2 });
    await msg({ customer: c2, dir: 'inbound', at: '2026-10-05T09:21:00Z', execution: e2, reply: true });
    await msg({ customer: c2, dir: 'outbound', at: '2026-10-05T09:21:01Z', execution: e2 });

    // e3: c1, the form timed out after 900 s.
    const m3 = await opening(c1, '2026-10-05T10:04:00Z');
    const e3 = await exec({ customer: c1, status: 'failed', error: 'timeout', started: '2026-10-05T10:05:00Z', duration: 900_000 });
    await link(m3, e3);
    await step(e3, 'greet', 'message', 'completed', 10);
    await step(e3, 'ask', 'form', 'failed', 900_000);
    await msg({ customer: c1, dir: 'outbound', at: '2026-10-05T10:05:01Z', execution: e3 });
    await msg({ customer: c1, dir: 'outbound', at: '2026-10-05T10:05:02Z', execution: e3 });

    // e4: c3 on instagram through trigger trg_fx, api_error at the first node after 2 s.
    const m4 = await opening(c3, '2026-10-06T14:29:00Z', 'instagram');
    const e4 = await exec({ customer: c3, channel: 'instagram', trigger: 'trg_fx', status: 'failed', error: 'api_error', started: '2026-10-06T14:30:00Z', duration: 2000 });
    await link(m4, e4);
    await step(e4, 'greet', 'message', 'failed', 20);

    // e5: c2, cancelled after the form (rating 4, nps 2).
    const m5 = await opening(c2, '2026-10-06T14:39:00Z');
    const e5 = await exec({ customer: c2, status: 'cancelled', started: '2026-10-06T14:40:00Z', duration: 100 });
    await link(m5, e5);
    await step(e5, 'greet', 'message', 'completed', 10);
    await step(e5, 'ask', 'form', 'completed', 1000, { scores: { rating: [4], nps: [2] } });
    await msg({ customer: c2, dir: 'outbound', at: '2026-10-06T14:40:01Z', execution: e5 });
    await msg({ customer: c2, dir: 'outbound', at: '2026-10-06T14:40:02Z', execution: e5 });
    await msg({ customer: c2, dir: 'inbound', at: '2026-10-06T14:41:00Z', execution: e5, reply: true });

    // e6: c4, still running.
    const m6 = await opening(c4, '2026-10-07T07:59:30Z');
    const e6 = await exec({ customer: c4, status: 'running', started: '2026-10-07T08:00:00Z' });
    await link(m6, e6);
    await step(e6, 'greet', 'message', 'completed', 10);
    await msg({ customer: c4, dir: 'outbound', at: '2026-10-07T08:00:01Z', execution: e6 });

    // c5 writes something nothing matches.
    await opening(c5, '2026-10-07T12:00:00Z');

    // The latency fixture: 1000 finished executions of `pct` on 2026-10-05 with spread-out durations.
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, completed_at, duration_ms, temporal_started_at)
       select 'exec_p' || i, ?, ?, 1, null, 'voice', case when i % 10 = 0 then 'failed' else 'success' end,
              '2026-10-05T00:00:00Z'::timestamptz + i * interval '60 seconds', now(), round(20 * exp(((i * 7919) % 1000) / 110.0))::int, now()
         from generate_series(1, 1000) i`,
      [org, pct],
    );

    // Another organization's running execution and message must never show up.
    const other = await t.createKey('admin', await t.createOrg());
    const w2 = (await t.request.post('/v1/workflows').set(bearer(other.key)).send({ name: 'Other', channel: 'whatsapp' })).body.data.id;
    await t.query(`insert into customers (id, organization_id, channel, external_id) values ('cus_other', ?, 'whatsapp', 'o')`, [other.organizationId]);
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at)
       values ('exec_other', ?, ?, 1, 'cus_other', 'whatsapp', 'running', '2026-10-05T09:30:00Z')`,
      [other.organizationId, w2],
    );
  });
  afterAll(() => t.close());

  const get = (path: string, key = reader) => t.request.get(path).set(bearer(key));
  const PERIOD = 'start_date=2026-10-05&end_date=2026-10-07';

  it('workflow analytics: metrics, trends and daily buckets of a hand-built period', async () => {
    const res = await get(`/v1/analytics/workflows/${wf}?${PERIOD}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      workflow_id: wf,
      period: { start_date: '2026-10-05T00:00:00.000Z', end_date: '2026-10-08T00:00:00.000Z' },
      metrics: {
        total_executions: 6,
        successful_executions: 2,
        failed_executions: 2,
        success_rate: 0.5,
        average_duration_ms: 275_500, // (130000 + 70000 + 900000 + 2000) / 4
        unique_customers: 4,
        channel_breakdown: { instagram: 1, whatsapp: 5 },
        total_messages_sent: 11,
        total_messages_received: 9,
        customer_satisfaction: 4, // (5 + 3 + 4) / 3
        net_promoter_score: 33.3, // (2 promoters − 1 detractor) / 3
      },
      trends: { execution_trend: 'increasing', success_rate_trend: 'decreasing', duration_trend: 'increasing' },
      daily_metrics: [
        { date: '2026-10-05', executions: 3, success_rate: 0.6667, average_duration_ms: 366_667, messages_sent: 8, messages_received: 5, unique_customers: 2 },
        { date: '2026-10-06', executions: 2, success_rate: 0, average_duration_ms: 2000, messages_sent: 2, messages_received: 3, unique_customers: 2 },
        { date: '2026-10-07', executions: 1, success_rate: 0, average_duration_ms: 0, messages_sent: 1, messages_received: 1, unique_customers: 1 },
      ],
    });
  });

  it('selects metrics (comma-separated or repeated) and groups by channel and trigger', async () => {
    const a = await get(`/v1/analytics/workflows/${wf}?${PERIOD}&metrics=total_executions,success_rate&group_by=channel`);
    const b = await get(`/v1/analytics/workflows/${wf}?${PERIOD}&metrics=total_executions&metrics=success_rate&group_by=channel`);
    expect(a.status).toBe(200);
    expect(a.body.data.metrics).toEqual({ total_executions: 6, success_rate: 0.5 });
    expect(b.body.data.metrics).toEqual(a.body.data.metrics);
    expect(a.body.data.groups).toEqual([
      { key: { channel: 'instagram' }, metrics: { total_executions: 1, success_rate: 0 } },
      { key: { channel: 'whatsapp' }, metrics: { total_executions: 5, success_rate: 0.6667 } },
    ]);
    const byTrigger = await get(`/v1/analytics/workflows/${wf}?${PERIOD}&metrics=total_executions,unique_customers&group_by=trigger_id`);
    expect(byTrigger.body.data.groups).toEqual([
      { key: { trigger_id: '' }, metrics: { total_executions: 5, unique_customers: 3 } },
      { key: { trigger_id: 'trg_fx' }, metrics: { total_executions: 1, unique_customers: 1 } },
    ]);
  });

  it('agrees with GET /v1/workflows/{id}/metrics on a period that does not start or end on an hour', async () => {
    const q = 'start_date=2026-10-05T09:15:00Z&end_date=2026-10-06T14:35:00Z';
    const [analytics, metrics] = await Promise.all([get(`/v1/analytics/workflows/${wf}?${q}`, admin), get(`/v1/workflows/${wf}/metrics?${q}`, admin)]);
    expect(analytics.status).toBe(200);
    const m = metrics.body.data.metrics;
    expect(analytics.body.data.metrics).toMatchObject({
      total_executions: 3, // e2, e3, e4
      successful_executions: m.successful_executions,
      failed_executions: m.failed_executions,
      success_rate: m.success_rate,
      average_duration_ms: m.average_duration_ms,
      unique_customers: m.unique_customers,
      channel_breakdown: m.channel_breakdown,
      total_messages_sent: m.total_messages_sent,
      total_messages_received: m.total_messages_received,
    });
    // `metrics` is the workflow metrics object, name for name, plus customer_satisfaction and net_promoter_score.
    expect(Object.keys(analytics.body.data.metrics).sort()).toEqual([...Object.keys(m), 'customer_satisfaction', 'net_promoter_score'].sort());
    expect(m.total_executions).toBe(3);
    expect(analytics.body.data.daily_metrics.map((d: { executions: number }) => d.executions)).toEqual(
      metrics.body.data.daily_metrics.map((d: { executions: number }) => d.executions),
    );
  });

  it('performance: percentiles, throughput, error rates, nodes and channels', async () => {
    const res = await get(`/v1/analytics/workflows/${wf}/performance?${PERIOD}`);
    expect(res.status).toBe(200);
    const p = res.body.data.performance;
    expect(p.execution_time.average_ms).toBe(275_500);
    // percentile_cont(0.5) of 2000, 70000, 130000, 900000 is 100000; within 2 %.
    expect(Math.abs(p.execution_time.median_ms - 100_000)).toBeLessThanOrEqual(2000);
    expect(p.throughput).toEqual({ executions_per_hour: 0.08, peak_executions_per_hour: 2, peak_hour: '09:00' });
    expect(p.error_rate).toEqual({ overall: 0.5, by_error_type: { timeout: 0.25, api_error: 0.25, validation_error: 0, window_closed: 0 } });
    expect(p.node_performance).toEqual([
      { node_id: 'greet', type: 'message', execution_count: 6, success_rate: 0.8333, average_duration_ms: 12, error_count: 1 },
      { node_id: 'ask', type: 'form', execution_count: 4, success_rate: 0.75, average_duration_ms: 247_750, error_count: 1 },
      { node_id: 'bye', type: 'message', execution_count: 2, success_rate: 1, average_duration_ms: 5, error_count: 0 },
    ]);
    expect(p.channel_performance).toEqual({
      instagram: { executions: 1, success_rate: 0, average_duration_ms: 2000 },
      whatsapp: { executions: 5, success_rate: 0.6667, average_duration_ms: 366_667 },
    });
    const lean = await get(`/v1/analytics/workflows/${wf}/performance?${PERIOD}&include_nodes=false&include_channels=false`);
    expect(lean.body.data.performance.node_performance).toBeUndefined();
    expect(lean.body.data.performance.channel_performance).toBeUndefined();
  });

  it('percentiles stay within 2 % of the exact percentile_cont', async () => {
    const res = await get(`/v1/analytics/workflows/${pct}/performance?${PERIOD}`, admin);
    const [exact] = await t.query<{ p50: number; p95: number; p99: number }>(
      `select percentile_cont(0.5) within group (order by duration_ms) as p50, percentile_cont(0.95) within group (order by duration_ms) as p95,
              percentile_cont(0.99) within group (order by duration_ms) as p99
         from executions where workflow_id = ? and status in ('success', 'failed')`,
      [pct],
    );
    const t_ = res.body.data.performance.execution_time;
    for (const [api, want] of [
      [t_.median_ms, exact!.p50],
      [t_.p95_ms, exact!.p95],
      [t_.p99_ms, exact!.p99],
    ] as Array<[number, number]>) {
      expect(Math.abs(api - want)).toBeLessThanOrEqual(0.02 * want + 0.5);
    }
    // The fixture is spread widely enough that the check means something.
    expect(exact!.p99 / exact!.p50).toBeGreaterThan(10);
  });

  it('customer engagement: customers, sessions, satisfaction and segments', async () => {
    const res = await get(`/v1/analytics/customers/engagement?${PERIOD}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      period: { start_date: '2026-10-05T00:00:00.000Z', end_date: '2026-10-08T00:00:00.000Z' },
      engagement: {
        total_customers: 5,
        active_customers: 5,
        new_customers: 4,
        returning_customers: 1,
        average_session_duration: 73.57, // 515 s over 7 sessions
        average_messages_per_session: 3, // 21 messages over 7 sessions
        customer_satisfaction: 4,
        net_promoter_score: 33.3,
        handoff_rate: 0,
        engagement_by_channel: {
          instagram: { customers: 1, average_session_duration: 0, satisfaction: null },
          whatsapp: { customers: 4, average_session_duration: 85.83, satisfaction: 4 },
        },
      },
      trends: { customer_growth: 'increasing', engagement_trend: 'increasing', satisfaction_trend: 'stable' },
    });
    const returning = (await get(`/v1/analytics/customers/engagement?${PERIOD}&customer_segment=returning`)).body.data.engagement;
    expect(returning).toMatchObject({
      active_customers: 1,
      new_customers: 0,
      returning_customers: 1,
      average_session_duration: 121.5,
      average_messages_per_session: 4,
      customer_satisfaction: 5,
      net_promoter_score: 100,
    });
    const vip = (await get(`/v1/analytics/customers/engagement?${PERIOD}&customer_segment=vip`)).body.data.engagement;
    expect(vip).toMatchObject({
      total_customers: 1,
      active_customers: 1,
      new_customers: 1,
      average_session_duration: 120.5,
      average_messages_per_session: 4.5,
      customer_satisfaction: 3.5,
      net_promoter_score: 0, // 9 is a promoter, 2 a detractor
    });
    const instagram = (await get(`/v1/analytics/customers/engagement?${PERIOD}&channel=instagram`)).body.data.engagement;
    expect(instagram).toMatchObject({ total_customers: 1, active_customers: 1, customer_satisfaction: null, net_promoter_score: null });
  });

  it('conversation journey: the funnel and its drop-offs', async () => {
    const res = await get(`/v1/analytics/customers/journey?${PERIOD}`);
    expect(res.status).toBe(200);
    expect(res.body.data.journey).toEqual({
      total_journeys: 7,
      completed_journeys: 2,
      completion_rate: 0.2857,
      average_journey_duration: 160_000,
      // Journeys that entered each step (completed the one before): c5's message entered only step 1; e4 (api_error)
      // entered first_reply_sent; e3 (form timed out) and e6 (running) saw the question, so they entered input_collected;
      // e5 (cancelled after the form) entered completed. completion_rate = completed it / entered it.
      journey_steps: [
        { step: 1, name: 'message_received', customers: 7, completion_rate: 1, average_duration_ms: 0 },
        { step: 2, name: 'execution_started', customers: 7, completion_rate: 0.8571, average_duration_ms: 55_000 },
        { step: 3, name: 'first_reply_sent', customers: 6, completion_rate: 0.8333, average_duration_ms: 55_000 },
        { step: 4, name: 'input_collected', customers: 5, completion_rate: 0.6, average_duration_ms: 140_000 },
        { step: 5, name: 'completed', customers: 3, completion_rate: 0.6667, average_duration_ms: 160_000 },
      ],
      drop_off_points: [
        { step: 2, name: 'execution_started', drop_off_count: 1, drop_off_rate: 0.1429, common_reasons: ['no workflow matched'] },
        { step: 3, name: 'first_reply_sent', drop_off_count: 1, drop_off_rate: 0.1667, common_reasons: ['api_error'] },
        { step: 4, name: 'input_collected', drop_off_count: 2, drop_off_rate: 0.4, common_reasons: ['no reply before the form timed out', 'still running'] },
        { step: 5, name: 'completed', drop_off_count: 1, drop_off_rate: 0.3333, common_reasons: ['cancelled'] },
      ],
    });
  });

  it('workflow journey: nodes in path order', async () => {
    const res = await get(`/v1/analytics/customers/journey?${PERIOD}&journey_type=workflow&workflow_id=${wf}`);
    expect(res.status).toBe(200);
    expect(res.body.data.journey).toEqual({
      total_journeys: 6,
      completed_journeys: 2,
      completion_rate: 0.3333,
      average_journey_duration: 100_000, // e1 130 s, e2 70 s
      // greet: all 6 entered, e4 failed it. ask: 5 entered (e3 timed out in it: the customer saw the form;
      // e6 waits in it), e1, e2, e5 completed it. bye: e1, e2, e5 entered, e5 was cancelled before completing it.
      journey_steps: [
        { step: 1, name: 'greet', customers: 6, completion_rate: 0.8333, average_duration_ms: 10 },
        { step: 2, name: 'ask', customers: 5, completion_rate: 0.6, average_duration_ms: 30_333 },
        { step: 3, name: 'bye', customers: 3, completion_rate: 0.6667, average_duration_ms: 5 },
      ],
      drop_off_points: [
        { step: 1, name: 'greet', drop_off_count: 1, drop_off_rate: 0.1667, common_reasons: ['api_error'] },
        { step: 2, name: 'ask', drop_off_count: 2, drop_off_rate: 0.4, common_reasons: ['no reply before the form timed out', 'still running'] },
        { step: 3, name: 'bye', drop_off_count: 1, drop_off_rate: 0.3333, common_reasons: ['cancelled'] },
      ],
    });
    const noDrops = await get(`/v1/analytics/customers/journey?${PERIOD}&journey_type=workflow&workflow_id=${wf}&include_dropoffs=false`);
    expect(noDrops.body.data.journey.drop_off_points).toBeUndefined();
    const missing = await get(`/v1/analytics/customers/journey?journey_type=workflow`);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'MISSING_REQUIRED_FIELD', field: 'workflow_id' });
  });

  it('answers bad input with the contract codes and changes nothing', async () => {
    const unknown = await get(`/v1/analytics/workflows/wf_nope?${PERIOD}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('WORKFLOW_NOT_FOUND');
    const range = await get(`/v1/analytics/workflows/${wf}/performance?start_date=2026-10-05&end_date=2026-10-04`);
    expect(range.status).toBe(400);
    expect(range.body.error).toMatchObject({ code: 'INVALID_DATE_RANGE', field: 'end_date' });
    const gran = await get(`/v1/analytics/workflows/${wf}?granularity=fortnight`);
    expect(gran.status).toBe(422);
    expect(gran.body.error.code).toBe('INVALID_GRANULARITY');
    const metrics = await get(`/v1/analytics/workflows/${wf}?metrics=total_executions,happiness`);
    expect(metrics.status).toBe(400);
    expect(metrics.body.error).toMatchObject({ code: 'INVALID_METRICS', field: 'metrics' });
    // The old names of the message totals are no metrics any more.
    const oldName = await get(`/v1/analytics/workflows/${wf}?metrics=messages_sent`);
    expect([oldName.status, oldName.body.error.code]).toEqual([400, 'INVALID_METRICS']);
    expect(oldName.body.error.message).toContain('total_messages_sent');
    expect(metrics.body.error.message).toContain('happiness');
    const group = await get(`/v1/analytics/workflows/${wf}?group_by=node`);
    expect(group.status).toBe(400);
    const tags = await t.request.put('/v1/customers/cus_other').set(bearer(admin)).send({ tags: ['x'] });
    expect(tags.status).toBe(404);
  });

  it('another organization sees none of it', async () => {
    const other = await t.createKey('admin', await t.createOrg());
    expect((await get(`/v1/analytics/workflows/${wf}`, other.key)).status).toBe(404);
    expect((await get(`/v1/analytics/workflows/${wf}/performance`, other.key)).status).toBe(404);
    const e = await get(`/v1/analytics/customers/engagement?${PERIOD}`, other.key);
    expect(e.body.data.engagement).toMatchObject({ total_customers: 0, active_customers: 0, customer_satisfaction: null });
    expect((await get(`/v1/analytics/realtime?workflow_id=${wf}`, other.key)).status).toBe(404);
  });

  it('the backfill (analytics_rebuild) reproduces exactly what the triggers counted', async () => {
    const snapshot = () =>
      t.query(
        `select (select json_agg(h order by organization_id, workflow_id, hour, trigger_id, channel) from (select * from analytics_hourly where started <> 0 or messages_in <> 0 or messages_out <> 0 or rating_count <> 0) h) as hourly,
                (select json_agg(n order by organization_id, workflow_id, hour, node_id) from analytics_node_hourly n) as nodes,
                (select json_agg(d order by organization_id, workflow_id, day, channel, customer_id) from analytics_customer_days d) as days`,
      );
    const before = await snapshot();
    await t.query('select analytics_rebuild()');
    expect(await snapshot()).toEqual(before);
  });

  it('realtime: running executions, the last hour of messages and health; system metrics for admins', async () => {
    const [c] = await t.query<{ id: string }>(`select id from customers where organization_id = ? and first_seen_at = '2026-10-03T11:59:00Z'`, [org]);
    const base = Date.now() - 600_000;
    const m = await msg({ customer: c!.id, dir: 'inbound', at: new Date(base).toISOString() });
    const e7 = await exec({ customer: c!.id, status: 'running', started: new Date(base + 1000).toISOString() });
    await link(m, e7);
    await msg({ customer: c!.id, dir: 'outbound', at: new Date(base + 2000).toISOString(), execution: e7 });

    const res = await get('/v1/analytics/realtime');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      timestamp: expect.any(String),
      current_metrics: {
        active_workflows: 1,
        active_executions: 2, // e6 and the one just started
        messages_in_last_hour: 1,
        average_response_time_ms: 2000,
        system_health: expect.stringMatching(/^(healthy|degraded)$/),
      },
      workflow_metrics: [{ workflow_id: wf, name: 'Survey', active_executions: 2, messages_in_last_hour: 1, average_response_time_ms: 2000 }],
      channel_metrics: { whatsapp: { active_conversations: 2, messages_in_last_hour: 1 } },
    });
    const voice = await get('/v1/analytics/realtime?channel=voice');
    expect(voice.body.data.current_metrics).toMatchObject({ active_executions: 0, messages_in_last_hour: 0 });

    expect((await get('/v1/analytics/realtime?include_system=true')).status).toBe(403);
    const sys = await get('/v1/analytics/realtime?include_system=true', admin);
    expect(sys.body.data.system_metrics).toEqual({ cpu_usage: expect.any(Number), memory_usage: expect.any(Number), api_response_time_ms: expect.any(Number) });
  });

  it('streams the realtime object as Server-Sent Events and stops when the client goes away', async () => {
    // Collected in the callbacks and asserted after the stream: an expect failing inside an
    // HTTP callback would surface as a timeout, not as the failed assertion.
    const frames: string[] = [];
    let answer: { status?: number; contentType?: string } = {};
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${t.baseUrl}/v1/analytics/realtime/stream`, { headers: bearer(reader) }, (res) => {
        answer = { status: res.statusCode, contentType: res.headers['content-type'] };
        if (res.statusCode !== 200) {
          req.destroy();
          resolve();
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            frames.push(buf.slice(0, i));
            buf = buf.slice(i + 2);
            if (frames.length === 2) {
              req.destroy();
              resolve();
            }
          }
        });
      });
      req.on('error', (err) => (frames.length >= 2 ? undefined : reject(err)));
    });
    expect(answer.status).toBe(200);
    expect(answer.contentType).toContain('text/event-stream');
    expect(frames.map((f) => f.split('\n').map((l) => l.replace(/^data: .*/, 'data: …')))).toEqual([
      ['event: realtime', 'data: …'],
      ['event: realtime', 'data: …'],
    ]);
    const events = frames.map((f) => JSON.parse(f.split('\n')[1]!.slice('data: '.length)) as { current_metrics: { active_executions: number } });
    expect(events[0]!.current_metrics.active_executions).toBeGreaterThanOrEqual(1);
    expect(events[1]).toHaveProperty('timestamp');
    // The server dropped the stream: it keeps answering, and closing the app does not hang on it.
    expect((await get('/v1/analytics/realtime')).status).toBe(200);
    const bad = await get('/v1/analytics/realtime/stream?workflow_id=wf_nope');
    expect(bad.status).toBe(404);
  });
});
