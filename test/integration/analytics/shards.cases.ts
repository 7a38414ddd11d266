/**
 * Rollup rows committed by concurrent transactions: each transaction adds to a shard of the
 * key that no other holds (Migration20261129000100_sharded_rollups), so none waits for
 * another, and every reader sums the shards: the API answers as if there were one row, and
 * `analytics_rebuild()` folds them into one row with the same sums.
 */
import { Client } from 'pg';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

const HOUR = '2026-10-05T10:00:00Z';
const PERIOD = 'start_date=2026-10-05T00:00:00Z&end_date=2026-10-06T00:00:00Z';

describe('sharded analytics rollups', () => {
  let t: TestApp;
  let key: string;
  let org: string;
  let wf: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    const created = await t.createKey('admin');
    key = created.key;
    org = created.organizationId;
    const res = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'Sharded', channel: 'whatsapp' });
    expect(res.status).toBe(201);
    wf = res.body.data.id;
    // A customer per transaction: their per-customer day rows are not what is contended here.
    for (const c of ['cus_quiet', 'cus_shard0', 'cus_shard1', 'cus_shard2']) {
      await t.query(`insert into customers (id, organization_id, channel, external_id) values (?, ?, 'whatsapp', ?)`, [c, org, c]);
    }
    for (let i = 0; i < 3; i++) {
      const c = new Client({ connectionString: t.databaseUrl });
      await c.connect();
      clients.push(c);
    }
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end()));
    await t.close();
  });

  /**
   * Runs `statement` in each client's own transaction, fires the named deferred rollup
   * trigger at once (so each transaction holds its rollup row, as at a commit), and only
   * then commits them all: the three hold their rows at the same time.
   */
  const concurrently = async (trigger: string, statement: (i: number) => [string, unknown[]]) => {
    for (const [i, c] of clients.entries()) {
      await c.query('begin');
      await c.query(...statement(i));
      await c.query(`set constraints ${trigger} immediate`);
    }
    await Promise.all(clients.map((c) => c.query('commit')));
  };

  const shards = (table: string) =>
    t.query<{ shard: number }>(`select shard from ${table} where organization_id = ? and workflow_id = ? order by shard`, [org, wf]);

  it('one transaction at a time adds to one row (shard 0)', async () => {
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, temporal_started_at)
       values ('exec_quiet', ?, ?, 1, 'cus_quiet', 'whatsapp', 'running', '2026-10-05T10:30:00Z', now())`,
      [org, wf],
    );
    await t.query(`update executions set status = 'failed', error_type = 'timeout', duration_ms = 5 where id = 'exec_quiet'`);
    await t.query(
      `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, duration_ms)
       values ('step_quiet', 'exec_quiet', ?, 'hi', 'message', 'failed', now(), 5)`,
      [org],
    );
    expect(await t.query(`select shard, started, failed from analytics_hourly where workflow_id = ?`, [wf])).toEqual([{ shard: 0, started: 1, failed: 1 }]);
    expect(await t.query(`select shard, steps from analytics_node_hourly where workflow_id = ?`, [wf])).toEqual([{ shard: 0, steps: 1 }]);
  });

  it('three transactions holding the key at once write three shards; the API sums them', async () => {
    await concurrently('executions_analytics_insert', (i) => [
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, temporal_started_at)
       values ($1, $2, $3, 1, $6, 'whatsapp', 'running', $4::timestamptz + $5 * interval '1 minute', now())`,
      [`exec_shard${i}`, org, wf, HOUR, i, `cus_shard${i}`],
    ]);
    expect(await shards('analytics_hourly')).toEqual([{ shard: 0 }, { shard: 1 }, { shard: 2 }]);

    // The finishes move each execution's contribution (running out, success in) on whatever
    // shard is free: a shard may go negative, the key's sums stay right.
    await concurrently('executions_analytics_update', (i) => [
      `update executions set status = 'success', completed_at = started_at + $2 * interval '1 millisecond', duration_ms = $2 where id = $1`,
      [`exec_shard${i}`, 100 * (i + 1)],
    ]);
    await concurrently('execution_steps_analytics', (i) => [
      `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, duration_ms)
       values ($1, $2, $3, 'hi', 'message', 'success', now(), 10)`,
      [`step_shard${i}`, `exec_shard${i}`, org],
    ]);
    expect(await shards('analytics_node_hourly')).toEqual([{ shard: 0 }, { shard: 1 }, { shard: 2 }]);

    const analytics = await t.request.get(`/v1/analytics/workflows/${wf}?${PERIOD}`).set(bearer(key));
    expect(analytics.status).toBe(200);
    expect(analytics.body.data.metrics).toMatchObject({ total_executions: 4, successful_executions: 3, failed_executions: 1, average_duration_ms: 151 });
    const perf = await t.request.get(`/v1/analytics/workflows/${wf}/performance?${PERIOD}`).set(bearer(key));
    expect(perf.status).toBe(200);
    // Durations 5, 100, 200 and 300 ms, merged from every shard's histogram: the median
    // lies halfway between 100 and 200, p99 at 97 % of the way to 300 (each within 2 %).
    const time = perf.body.data.performance.execution_time;
    expect(time.average_ms).toBe(151);
    expect(time.median_ms).toBeGreaterThanOrEqual(147);
    expect(time.median_ms).toBeLessThanOrEqual(153);
    expect(time.p99_ms).toBeGreaterThanOrEqual(291);
    expect(time.p99_ms).toBeLessThanOrEqual(303);
    expect(perf.body.data.performance.node_performance).toEqual([expect.objectContaining({ node_id: 'hi', execution_count: 4, error_count: 1 })]);
  });

  it('the rebuild folds the shards into one row per key with the same sums and histogram', async () => {
    // Per key: every counter summed over its shards, the histogram merged bucket by bucket.
    const sums = () =>
      t.query(
        `select h.hour, h.trigger_id, h.channel, count(*)::int as rows, sum(started)::int as started, sum(succeeded)::int as succeeded,
                sum(failed)::int as failed, sum(timeout_errors)::int as timeouts, sum(duration_sum_ms)::int as duration,
                (select jsonb_object_agg(b, n) from (
                   select b, sum(x.latency_hist[b])::int as n
                     from analytics_hourly x, generate_subscripts(x.latency_hist, 1) b
                    where x.workflow_id = h.workflow_id and x.hour = h.hour and x.trigger_id = h.trigger_id and x.channel = h.channel
                    group by b having sum(x.latency_hist[b]) <> 0) k) as hist,
                (select sum(steps)::int from analytics_node_hourly n where n.workflow_id = h.workflow_id and n.hour = h.hour) as steps
           from analytics_hourly h where h.workflow_id = ? group by 1, 2, 3, h.workflow_id order by 1`,
        [wf],
      );
    const before = await sums();
    expect(before.map((r) => (r as { rows: number }).rows)).toEqual([3]);
    await t.query('select analytics_rebuild()');
    const after = await sums();
    const withoutRows = (rs: object[]) => rs.map(({ rows: _, ...r }: { rows?: number }) => r);
    expect(after.map((r) => (r as { rows: number }).rows)).toEqual([1]);
    expect(withoutRows(after)).toEqual(withoutRows(before));
    expect(after[0]).toMatchObject({ started: 4, succeeded: 3, failed: 1, timeouts: 1, duration: 605, steps: 4 });
    expect(Object.values((after[0] as { hist: Record<string, number> }).hist)).toEqual([1, 1, 1, 1]);
  });
});
