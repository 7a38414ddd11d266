/**
 * The daily tiers (Migration20261209000100_daily_rollups): workflow counters per UTC day
 * (`analytics_daily`) and distinct customers from the customer-days counted by their
 * previous day (`analytics_customer_returns`). Rows are inserted directly (the rollup
 * triggers count them as real executions); each expected number is counted by hand in the
 * comments, and checked against count(distinct) over the executions too.
 */
import { Client } from 'pg';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const DAY = 86_400_000;

describe('analytics daily tiers', () => {
  let t: TestApp;
  let key: string;
  let org: string;
  let wf: string;
  let live: string;
  const seq = { n: 0 };
  const id = (p: string) => `${p}_dt${String(++seq.n).padStart(4, '0')}`;

  const customer = async (ch: string) => {
    const c = id('cus');
    await t.query(`insert into customers (id, organization_id, channel, external_id) values (?, ?, ?, ?)`, [c, org, ch, c]);
    return c;
  };
  const exec = (workflow: string, customerId: string, channel: string, started: string | Date) =>
    t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, completed_at, duration_ms, temporal_started_at)
       values (?, ?, ?, 1, ?, ?, 'success', ?::timestamptz, ?::timestamptz + interval '1 second', 1000, now())`,
      [id('exec'), org, workflow, customerId, channel, started, started],
    );
  const get = (path: string) => t.request.get(path).set(bearer(key));
  /** count(distinct customer_id) of the workflow's executions started in [from, to), optionally on one channel. */
  const exact = async (workflow: string, from: string | Date, to: string | Date, channel?: string) => {
    const [row] = await t.query<{ n: number }>(
      `select count(distinct customer_id)::int as n from executions
        where organization_id = ? and workflow_id = ? and started_at >= ? and started_at < ?${channel ? ' and channel = ?' : ''}`,
      [org, workflow, from, to, ...(channel ? [channel] : [])],
    );
    return row!.n;
  };

  beforeAll(async () => {
    t = await createTestApp();
    const created = await t.createKey('admin');
    key = created.key;
    org = created.organizationId;
    const make = async (name: string) => (await t.request.post('/v1/workflows').set(bearer(key)).send({ name, channel: 'whatsapp' }).expect(201)).body.data.id as string;
    wf = await make('Days');
    live = await make('Live edge');

    const [a, b, c, d] = [await customer('whatsapp'), await customer('whatsapp'), await customer('instagram'), await customer('whatsapp')];
    // 2026-10-01 is a Thursday; weeks start on Monday 09-28 and 10-05.
    await exec(wf, a, 'whatsapp', '2026-10-01T23:59:59Z'); // A: 10-01, one second before the day boundary
    await exec(wf, a, 'whatsapp', '2026-10-02T00:00:00Z'); // A: 10-02, on the boundary
    await exec(wf, b, 'whatsapp', '2026-10-02T12:00:00Z'); // B: 10-02
    await exec(wf, c, 'instagram', '2026-10-03T08:00:00Z'); // C: 10-03
    await exec(wf, d, 'whatsapp', '2026-10-03T09:00:00Z'); // D: 10-03 on whatsapp…
    await exec(wf, d, 'instagram', '2026-10-03T10:00:00Z'); // …and on instagram: one customer of 10-03
    await exec(wf, a, 'whatsapp', '2026-10-05T06:00:00Z'); // A: 10-05
    await exec(wf, b, 'whatsapp', '2026-10-05T23:30:00Z'); // B: 10-05
    await exec(wf, d, 'instagram', '2026-10-06T00:30:00Z'); // D: 10-06
    // Late writes for earlier days than the customer's days already counted.
    await exec(wf, c, 'instagram', '2026-10-01T05:00:00Z'); // C: 10-01, before its 10-03
    await exec(wf, b, 'whatsapp', '2026-10-04T00:00:00Z'); // B: 10-04, between its 10-02 and 10-05
  });
  afterAll(() => t.close());

  it('whole days: distinct customers in total, per day, per week and per channel', async () => {
    const period = 'start_date=2026-10-01T00:00:00Z&end_date=2026-10-07T00:00:00Z';
    const res = await get(`/v1/analytics/workflows/${wf}?${period}&metrics=total_executions,unique_customers&group_by=channel`);
    expect(res.status).toBe(200);
    expect(res.body.data.metrics).toEqual({ total_executions: 11, unique_customers: 4 }); // A, B, C, D
    expect(res.body.data.metrics.unique_customers).toBe(await exact(wf, '2026-10-01T00:00:00Z', '2026-10-07T00:00:00Z'));
    expect(res.body.data.daily_metrics.map((b: { date: string; executions: number; unique_customers: number }) => [b.date, b.executions, b.unique_customers])).toEqual([
      ['2026-10-01', 2, 2], // A, C
      ['2026-10-02', 2, 2], // A, B
      ['2026-10-03', 3, 2], // C, D (twice)
      ['2026-10-04', 1, 1], // B
      ['2026-10-05', 2, 2], // A, B
      ['2026-10-06', 1, 1], // D
    ]);
    expect(res.body.data.groups).toEqual([
      { key: { channel: 'instagram' }, metrics: { total_executions: 4, unique_customers: 2 } }, // C, D
      { key: { channel: 'whatsapp' }, metrics: { total_executions: 7, unique_customers: 3 } }, // A, B, D
    ]);

    // Weeks clipped to the period: 10-02..10-04 (C counts: its previous day, 10-01, is before the period).
    const weeks = await get(`/v1/analytics/workflows/${wf}?start_date=2026-10-02T00:00:00Z&end_date=2026-10-06T00:00:00Z&granularity=week`);
    expect(weeks.body.data.metrics.unique_customers).toBe(4); // A, B, C, D
    expect(weeks.body.data.daily_metrics.map((b: { date: string; unique_customers: number }) => [b.date, b.unique_customers])).toEqual([
      ['2026-09-28', 4], // A, B, C, D
      ['2026-10-05', 2], // A, B
    ]);
  });

  it('partial days at both ends: the edges read live, each customer counted once with the whole days', async () => {
    // Start edge 10-01 12:00–24:00: A (23:59:59), not C (05:00). Whole days 10-02..10-04.
    // End edge 10-05 00:00–12:00: A (06:00), not B (23:30).
    const from = '2026-10-01T12:00:00Z';
    const to = '2026-10-05T12:00:00Z';
    const res = await get(`/v1/analytics/workflows/${wf}?start_date=${from}&end_date=${to}&metrics=total_executions,unique_customers&group_by=channel`);
    expect(res.body.data.metrics).toEqual({ total_executions: 8, unique_customers: 4 }); // A (edges and 10-02), B, C, D
    expect(res.body.data.metrics.unique_customers).toBe(await exact(wf, from, to));
    expect(res.body.data.daily_metrics.map((b: { date: string; unique_customers: number }) => [b.date, b.unique_customers])).toEqual([
      ['2026-10-01', 1], // A
      ['2026-10-02', 2], // A, B
      ['2026-10-03', 2], // C, D
      ['2026-10-04', 1], // B
      ['2026-10-05', 1], // A
    ]);
    expect(res.body.data.groups).toEqual([
      { key: { channel: 'instagram' }, metrics: { total_executions: 2, unique_customers: 2 } }, // C, D
      { key: { channel: 'whatsapp' }, metrics: { total_executions: 6, unique_customers: 3 } }, // A, B, D
    ]);
    const weeks = await get(`/v1/analytics/workflows/${wf}?start_date=${from}&end_date=${to}&granularity=week`);
    expect(weeks.body.data.daily_metrics.map((b: { date: string; unique_customers: number }) => [b.date, b.unique_customers])).toEqual([
      ['2026-09-28', 4], // A (edge and 10-02), B, C, D
      ['2026-10-05', 1], // A (edge)
    ]);

    // Start edge 10-03 09:30–24:00: D on instagram (10:00) only. Whole 10-04, 10-05. End edge
    // 10-06 00:00–00:45: D on instagram again: one customer across both edges.
    const from2 = '2026-10-03T09:30:00Z';
    const to2 = '2026-10-06T00:45:00Z';
    const res2 = await get(`/v1/analytics/workflows/${wf}?start_date=${from2}&end_date=${to2}&granularity=month&group_by=channel&metrics=unique_customers`);
    expect(res2.body.data.metrics).toEqual({ unique_customers: 3 }); // D, B, A
    expect(res2.body.data.daily_metrics.map((b: { date: string; unique_customers: number }) => [b.date, b.unique_customers])).toEqual([['2026-10-01', 3]]);
    expect(res2.body.data.groups).toEqual([
      { key: { channel: 'instagram' }, metrics: { unique_customers: 1 } }, // D
      { key: { channel: 'whatsapp' }, metrics: { unique_customers: 2 } }, // B, A
    ]);
    expect(await exact(wf, from2, to2, 'instagram')).toBe(1);
  });

  it('a period ending now: today is read live and joins the rollup days exactly', async () => {
    const now = Date.now();
    const today = Math.floor(now / DAY) * DAY;
    const [a, e] = [await customer('whatsapp'), await customer('whatsapp')];
    const recent = new Date(Math.max(today, now - 60_000));
    await exec(live, a, 'whatsapp', new Date(today - DAY + 3600_000)); // A yesterday (a whole day of the period)
    await exec(live, a, 'whatsapp', recent); // A today (the live edge)
    await exec(live, e, 'whatsapp', recent); // E today
    const from = new Date(today - 3 * DAY + 12 * 3600_000); // starts mid-day: a partial start day too
    const res = await get(`/v1/analytics/workflows/${live}?start_date=${from.toISOString()}&metrics=total_executions,unique_customers`);
    expect(res.status).toBe(200);
    expect(res.body.data.metrics).toEqual({ total_executions: 3, unique_customers: 2 }); // A, E
    const days = Object.fromEntries(res.body.data.daily_metrics.map((b: { date: string; unique_customers: number }) => [b.date, b.unique_customers]));
    expect(days[new Date(today - DAY).toISOString().slice(0, 10)]).toBe(1); // A
    expect(days[new Date(today).toISOString().slice(0, 10)]).toBe(2); // A, E

    // A year, by month, ends at the same live edge.
    const year = await get(`/v1/analytics/workflows/${live}?start_date=${new Date(now - 365 * DAY).toISOString()}&granularity=month&metrics=unique_customers`);
    expect(year.body.data.metrics).toEqual({ unique_customers: 2 });
    expect(year.body.data.metrics.unique_customers).toBe(await exact(live, new Date(now - 365 * DAY), new Date(Date.now() + 1)));
  });

  it('two transactions adding the same customer-day on two channels at once count one customer', async () => {
    const other = (await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'Concurrent', channel: 'whatsapp' }).expect(201)).body.data.id as string;
    const f = await customer('whatsapp');
    const [c1, c2] = [new Client({ connectionString: t.databaseUrl }), new Client({ connectionString: t.databaseUrl })];
    await Promise.all([c1.connect(), c2.connect()]);
    const insert = (c: Client, channel: string) =>
      c.query(
        `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, temporal_started_at)
         values ($1, $2, $3, 1, $4, $5, 'running', '2026-10-10T10:00:00Z', now())`,
        [id('exec'), org, other, f, channel],
      );
    try {
      // The first fires its rollup trigger (as at its commit) and holds its customer-day;
      // the second's trigger runs meanwhile, and may only count after the first committed.
      await c1.query('begin');
      await insert(c1, 'whatsapp');
      await c1.query('set constraints executions_analytics_insert immediate');
      await c2.query('begin');
      await insert(c2, 'instagram');
      const second = c2.query('set constraints executions_analytics_insert immediate');
      await c1.query('commit');
      await second;
      await c2.query('commit');
    } finally {
      await Promise.all([c1.end(), c2.end()]);
    }
    const res = await get(`/v1/analytics/workflows/${other}?start_date=2026-10-10&end_date=2026-10-10&metrics=total_executions,unique_customers&group_by=channel`);
    expect(res.body.data.metrics).toEqual({ total_executions: 2, unique_customers: 1 });
    expect(res.body.data.groups).toEqual([
      { key: { channel: 'instagram' }, metrics: { total_executions: 1, unique_customers: 1 } },
      { key: { channel: 'whatsapp' }, metrics: { total_executions: 1, unique_customers: 1 } },
    ]);
  });

  it('the backfill (analytics_rebuild) reproduces the daily tiers the triggers kept', async () => {
    // Shards summed per key; keys whose sums are all zero are no rows to the readers.
    const snapshot = () =>
      t.query(
        `select (select json_agg(x order by workflow_id, day, trigger_id, channel) from (
                   select workflow_id, day, trigger_id, channel, sum(started) as started, sum(succeeded) as succeeded, sum(failed) as failed,
                          sum(timeout_errors) as timeouts, sum(duration_sum_ms) as duration,
                          sum(messages_in) as messages_in, sum(messages_out) as messages_out
                     from analytics_daily where organization_id = ? group by 1, 2, 3, 4) x
                  where started <> 0 or messages_in <> 0 or messages_out <> 0) as daily,
                (select json_agg(x order by workflow_id, channel, day, since_day) from (
                   select workflow_id, channel, day, since_day, sum(customers) as customers
                     from analytics_customer_returns where organization_id = ? group by 1, 2, 3, 4) x where customers <> 0) as returns`,
        [org, org],
      );
    // A finish moves an execution's contribution within its day (one upsert of the difference).
    const [running] = await t.query<{ id: string }>(`select id from executions where workflow_id = ? order by id limit 1`, [wf]);
    await t.query(`update executions set status = 'running', completed_at = null, duration_ms = null where id = ?`, [running!.id]);
    await t.query(`update executions set status = 'failed', error_type = 'timeout', completed_at = started_at + interval '5 seconds', duration_ms = 5000 where id = ?`, [
      running!.id,
    ]);
    const before = await snapshot();
    expect((before[0] as { returns: unknown[] }).returns.length).toBeGreaterThan(0);
    await t.query('select analytics_rebuild()');
    expect(await snapshot()).toEqual(before);
  });
});
