/**
 * /performance over whole UTC days reads the daily tier's hours of day and latency histogram
 * (Migration20261222000200_daily_hours: `started_by_hour`, `latency_hist` of analytics_daily),
 * the partial edge days the hours. Rows are inserted and finished directly (the rollup
 * triggers count them as the worker's writes); the expected figures are counted by hand in the
 * comments and checked against exact SQL over the executions.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('analytics: hours of day and latency from the daily tier', () => {
  let t: TestApp;
  let key: string;
  let org: string;
  let wf: string;
  const seq = { n: 0 };
  const id = (p: string) => `${p}_dh${String(++seq.n).padStart(4, '0')}`;

  const exec = async (started: string, status: string, duration: number | null, channel = 'whatsapp', errorType: string | null = null) => {
    const e = id('exec');
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, channel, status, error_type, started_at, completed_at, duration_ms, temporal_started_at)
       values (?, ?, ?, 1, ?, ?, ?, ?::timestamptz, case when ? then ?::timestamptz + interval '1 second' end, ?, now())`,
      [e, org, wf, channel, status, errorType, started, status !== 'running', started, duration],
    );
    return e;
  };
  const get = (path: string) => t.request.get(path).set(bearer(key));
  /** The exact figures over the executions started in [from, to). */
  const exact = async (from: string, to: string) => {
    const [row] = await t.query<{ peak: number; peak_hour: string | null; p50: number; p95: number; p99: number }>(
      `select (select max(n) from (select count(*)::int as n from executions where workflow_id = ? and started_at >= ? and started_at < ?
                                     group by date_trunc('hour', started_at, 'UTC')) x) as peak,
              (select h from (select to_char(started_at at time zone 'UTC', 'HH24:00') as h, count(*) as n from executions
                                where workflow_id = ? and started_at >= ? and started_at < ? group by 1) x order by n desc, h limit 1) as peak_hour,
              percentile_cont(0.5) within group (order by duration_ms) as p50, percentile_cont(0.95) within group (order by duration_ms) as p95,
              percentile_cont(0.99) within group (order by duration_ms) as p99
         from executions where workflow_id = ? and started_at >= ? and started_at < ? and status in ('success', 'failed')`,
      [wf, from, to, wf, from, to, wf, from, to],
    );
    return row!;
  };
  const within2 = (got: number, exactMs: number) => expect(Math.abs(got - exactMs)).toBeLessThanOrEqual(exactMs * 0.02 + 0.5);

  beforeAll(async () => {
    t = await createTestApp();
    const created = await t.createKey('admin');
    key = created.key;
    org = created.organizationId;
    wf = (await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'Hours', channel: 'whatsapp' }).expect(201)).body.data.id;
    await exec('2026-10-01T09:05:00Z', 'success', 100);
    await exec('2026-10-01T09:40:00Z', 'success', 200);
    await exec('2026-10-01T09:59:00Z', 'failed', 300, 'whatsapp', 'timeout');
    await exec('2026-10-02T09:10:00Z', 'success', 400, 'instagram');
    await exec('2026-10-02T14:00:00Z', 'success', 1000);
    await exec('2026-10-02T14:20:00Z', 'success', 1000);
    // Finished later, as the worker does: the day's histogram gains its duration then.
    const running = await exec('2026-10-03T14:30:00Z', 'running', null);
    await t.query(`update executions set status = 'success', completed_at = started_at + interval '2 seconds', duration_ms = 2000 where id = ?`, [running]);
    // A finished execution whose duration changes: its old bucket out, the new one in.
    const changed = await exec('2026-10-03T14:45:00Z', 'success', 500);
    await t.query(`update executions set duration_ms = 600 where id = ?`, [changed]);
  });
  afterAll(() => t.close());

  it('whole days: peak clock hour, peak hour of day (earliest on a tie) and percentiles from the daily rows', async () => {
    const [from, to] = ['2026-10-01T00:00:00Z', '2026-10-04T00:00:00Z'];
    const res = await get(`/v1/analytics/workflows/${wf}/performance?start_date=${from}&end_date=${to}&include_nodes=false`);
    expect(res.status).toBe(200);
    const p = res.body.data.performance;
    // Clock hours: 10-01 09h 3, 10-02 09h 1, 10-02 14h 2, 10-03 14h 2. Hours of day: 09:00 4, 14:00 4.
    expect(p.throughput).toEqual({ executions_per_hour: Math.round((8 / 72) * 100) / 100, peak_executions_per_hour: 3, peak_hour: '09:00' });
    const x = await exact(from, to);
    expect([x.peak, x.peak_hour]).toEqual([3, '09:00']);
    // Finished: 100, 200, 300, 400, 1000, 1000, 2000, 600 (not 500).
    within2(p.execution_time.median_ms, x.p50);
    within2(p.execution_time.p95_ms, x.p95);
    within2(p.execution_time.p99_ms, x.p99);
    expect(p.execution_time.average_ms).toBe(Math.round(5600 / 8));
    expect(p.error_rate.overall).toBe(0.125);
    expect(p.channel_performance).toEqual({
      instagram: { executions: 1, success_rate: 1, average_duration_ms: 400 },
      whatsapp: { executions: 7, success_rate: Math.round((6 / 7) * 10_000) / 10_000, average_duration_ms: 743 },
    });
  });

  it('partial edge days from the hours: the same figures as exact SQL over the executions', async () => {
    const [from, to] = ['2026-10-01T09:30:00Z', '2026-10-03T14:40:00Z'];
    const res = await get(`/v1/analytics/workflows/${wf}/performance?start_date=${from}&end_date=${to}&include_nodes=false`);
    const p = res.body.data.performance;
    // Clock hours: 10-01 09h 2 (09:40, 09:59), 10-02 09h 1, 14h 2, 10-03 14h 1 (14:30). Hours of day: 09:00 3, 14:00 3.
    expect([p.throughput.peak_executions_per_hour, p.throughput.peak_hour]).toEqual([2, '09:00']);
    const x = await exact(from, to);
    expect([x.peak, x.peak_hour]).toEqual([2, '09:00']);
    within2(p.execution_time.median_ms, x.p50);
    within2(p.execution_time.p99_ms, x.p99);
  });

  it('the backfill (analytics_rebuild) reproduces the hours of day and histograms the triggers kept', async () => {
    // Non-zero entries per key, day and subscript, summed over the shards.
    const snapshot = () =>
      t.query(
        `select kind, day::text, trigger_id, channel, b, sum(n)::int as n from (
           select 'hour' as kind, d.day, d.trigger_id, d.channel, b, d.started_by_hour[b] as n
             from analytics_daily d cross join lateral generate_subscripts(d.started_by_hour, 1) b where d.organization_id = ?
           union all
           select 'latency', d.day, d.trigger_id, d.channel, b, d.latency_hist[b]
             from analytics_daily d cross join lateral generate_subscripts(d.latency_hist, 1) b where d.organization_id = ?) x
          group by 1, 2, 3, 4, 5 having sum(n) <> 0 order by 1, 2, 3, 4, 5`,
        [org, org],
      );
    const before = await snapshot();
    // 10-01 09h: 3 starts; 10-02: 09h 1 (instagram), 14h 2; 10-03 14h: 2.
    expect(before.filter((r) => (r as { kind: string }).kind === 'hour').map((r) => [(r as { day: string }).day, (r as { b: number }).b, (r as { n: number }).n])).toEqual([
      ['2026-10-01', 9, 3],
      ['2026-10-02', 9, 1],
      ['2026-10-02', 14, 2],
      ['2026-10-03', 14, 2],
    ]);
    await t.query('select analytics_rebuild()');
    expect(await snapshot()).toEqual(before);
  });
});
