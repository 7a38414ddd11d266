/**
 * Owns the analytics definitions over the rollups (migration 20261125000200): execution
 * counters, rates, durations and latency percentiles, message counts, customer
 * satisfaction and NPS, distinct customers, and trends. Analytics, reports and exports call
 * these functions; none of them restates a formula. Every definition is written out in
 * docs/analytics.md.
 *
 * Reading rule: whole UTC hours of the period come from `analytics_hourly` (whole UTC days
 * from `analytics_customer_days` for distinct customers); the partial hours (days) at the
 * period's edges are read live from the facts with the same definitions, through indexed
 * ranges no longer than an hour (a day). Everything about an execution (its status,
 * duration, steps and form answers) counts in the hour it started, a message in the hour
 * it was created: the same attribution as GET /v1/workflows/{id}/metrics, so the numbers
 * agree.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { type Granularity, successRatio } from './execution-metrics';

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

/** Relative error bound of the latency percentiles (the histogram's bucket width; see the migration). */
export const LATENCY_RELATIVE_ERROR = 0.02;
const GAMMA = (1 + LATENCY_RELATIVE_ERROR) / (1 - LATENCY_RELATIVE_ERROR);

/** The value that stands for histogram bucket `b`: within 2 % of every duration the bucket holds. */
export const bucketValue = (b: number) => (b <= 0 ? 0 : (2 * GAMMA ** (b - 1)) / (GAMMA + 1));

/** A merged latency histogram: [bucket, count] pairs in bucket order. */
export type Histogram = Array<[bucket: number, count: number]>;

/**
 * The `p` quantile (0–1) the way PostgreSQL's percentile_cont defines it (linear
 * interpolation between the order statistics around rank p·(n−1)), with each order
 * statistic replaced by its bucket's value: each is within 2 %, so the interpolation is
 * too. Null when the histogram is empty.
 */
export function histogramPercentile(hist: Histogram, p: number): number | null {
  const n = hist.reduce((s, [, c]) => s + c, 0);
  if (n === 0) return null;
  const rank = p * (n - 1);
  const at = (k: number) => {
    let seen = 0;
    for (const [b, c] of hist) {
      seen += c;
      if (k < seen) return bucketValue(b);
    }
    return bucketValue(hist[hist.length - 1]![0]);
  };
  const lo = Math.floor(rank);
  const v = at(lo) + (rank - lo) * (at(Math.ceil(rank)) - at(lo));
  return Math.round(v);
}

/**
 * What a question is about: an organization, optionally its workflows and channels (one id,
 * or a list for reports). Without a workflow the scope also holds the messages outside any
 * execution (rollup rows of workflow '').
 */
export interface Scope {
  organizationId: string;
  workflowId?: string | readonly string[];
  channel?: string | readonly string[];
}

export interface Period {
  start: Date;
  end: Date;
}

const floorTo = (d: Date, ms: number) => new Date(Math.floor(d.getTime() / ms) * ms);
const ceilTo = (d: Date, ms: number) => new Date(Math.ceil(d.getTime() / ms) * ms);

/** The period cut into whole units (`ms`: an hour or a day) and the partial edges. */
function split(period: Period, ms: number): { whole: Period | null; edges: Period[] } {
  const a = ceilTo(period.start, ms);
  const b = floorTo(period.end, ms);
  if (a >= b) return { whole: null, edges: [period] };
  const edges: Period[] = [];
  if (period.start < a) edges.push({ start: period.start, end: a });
  if (b < period.end) edges.push({ start: b, end: period.end });
  return { whole: { start: a, end: b }, edges };
}

/** The previous period of equal length, for trends. */
export const previousPeriod = (p: Period): Period => ({ start: new Date(2 * p.start.getTime() - p.end.getTime()), end: p.start });

/** Bucket starts of `period` at `granularity` (UTC; weeks start on Monday), as metrics' daily_metrics. */
export function bucketStarts(period: Period, granularity: Granularity): Date[] {
  const trunc = (d: Date) => {
    const t = new Date(d);
    if (granularity === 'hour') return floorTo(t, HOUR_MS);
    t.setUTCHours(0, 0, 0, 0);
    if (granularity === 'week') t.setUTCDate(t.getUTCDate() - ((t.getUTCDay() + 6) % 7));
    if (granularity === 'month') t.setUTCDate(1);
    return t;
  };
  const next = (d: Date) => {
    const t = new Date(d);
    if (granularity === 'hour') return new Date(t.getTime() + HOUR_MS);
    if (granularity === 'day') t.setUTCDate(t.getUTCDate() + 1);
    if (granularity === 'week') t.setUTCDate(t.getUTCDate() + 7);
    if (granularity === 'month') t.setUTCMonth(t.getUTCMonth() + 1);
    return t;
  };
  const out: Date[] = [];
  for (let b = trunc(period.start); b < period.end; b = next(b)) out.push(b);
  return out;
}

export const bucketLabel = (d: Date, granularity: Granularity) =>
  granularity === 'hour' ? `${d.toISOString().slice(0, 13)}:00:00Z` : d.toISOString().slice(0, 10);

/** SQL expression of the bucket label of timestamp expression `at` (UTC). */
const bucketSql = (at: string, granularity: Granularity) =>
  granularity === 'hour'
    ? `to_char(date_trunc('hour', ${at}, 'UTC') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:00:00"Z"')`
    : `to_char(date_trunc('${granularity}', ${at}, 'UTC') at time zone 'UTC', 'YYYY-MM-DD')`;

const COUNTER_COLUMNS = [
  'started',
  'succeeded',
  'failed',
  'cancelled',
  'timeout_errors',
  'api_errors',
  'validation_errors',
  'duration_sum_ms',
  'messages_in',
  'messages_out',
  'rating_sum',
  'rating_count',
  'nps_promoters',
  'nps_detractors',
  'nps_count',
] as const;
type CounterName = (typeof COUNTER_COLUMNS)[number];
export type Counters = Record<CounterName, number>;

const zeroCounters = (): Counters => Object.fromEntries(COUNTER_COLUMNS.map((c) => [c, 0])) as Counters;

interface Sql {
  sql: string;
  params: unknown[];
}

/** `and …` filters of a scope on a table alias whose columns are named like the rollups'. */
function scopeFilter(scope: Scope, alias: string, opts: { workflowColumn?: string } = {}): Sql {
  let sql = `${alias}.organization_id = ?`;
  const params: unknown[] = [scope.organizationId];
  const match = (column: string, value: string | readonly string[]) => {
    if (typeof value === 'string') {
      sql += ` and ${column} = ?`;
      params.push(value);
    } else {
      // An empty list matches nothing (a list expands to one placeholder per value).
      sql += value.length === 0 ? ' and false' : ` and ${column} in (${value.map(() => '?').join(', ')})`;
      params.push(...value);
    }
  };
  if (scope.workflowId !== undefined) match(opts.workflowColumn ?? `${alias}.workflow_id`, scope.workflowId);
  if (scope.channel !== undefined) match(`${alias}.channel`, scope.channel);
  return { sql, params };
}

/**
 * One relation of hourly counter rows for the period (columns: `hour`, `trigger_id`,
 * `channel` and the counters): rollup rows for whole hours, the same counters computed from
 * executions, messages and form steps for the partial edge hours.
 */
function hourlyFacts(scope: Scope, period: Period, opts: { days?: boolean } = {}): Sql {
  const parts: string[] = [];
  const params: unknown[] = [];
  const cols = COUNTER_COLUMNS.join(', ');
  // With `days`, whole UTC days come from the daily tier (a year is ~365 keys' rows, not ~8760).
  const days = opts.days ? split(period, DAY_MS) : { whole: null, edges: [period] };
  if (days.whole) {
    const f = scopeFilter(scope, 'd');
    parts.push(`select d.day::timestamp at time zone 'UTC', d.trigger_id, d.channel, ${cols} from analytics_daily d
                 where ${f.sql} and d.day >= ?::date and d.day < ?::date`);
    params.push(...f.params, isoDay(days.whole.start), isoDay(days.whole.end));
  }
  for (const part of days.edges) {
    const hours = hourlyFactsOfHours(scope, part);
    parts.push(hours.sql);
    params.push(...hours.params);
  }
  return { sql: parts.join('\nunion all\n'), params };
}

const isoDay = (d: Date) => d.toISOString().slice(0, 10);

/** hourlyFacts without the daily tier: whole hours from analytics_hourly, partial ones from the facts. */
function hourlyFactsOfHours(scope: Scope, period: Period): Sql {
  const { whole, edges } = split(period, HOUR_MS);
  const parts: string[] = [];
  const params: unknown[] = [];
  const cols = COUNTER_COLUMNS.join(', ');
  if (whole) {
    const f = scopeFilter(scope, 'h');
    parts.push(`select h.hour, h.trigger_id, h.channel, ${cols} from analytics_hourly h where ${f.sql} and h.hour >= ? and h.hour < ?`);
    params.push(...f.params, whole.start, whole.end);
  }
  for (const edge of edges) {
    const fe = scopeFilter(scope, 'e');
    parts.push(`select date_trunc('hour', e.started_at, 'UTC'), coalesce(e.trigger_id, ''), e.channel, 1,
        (e.status = 'success')::int, (e.status = 'failed')::int, (e.status = 'cancelled')::int,
        (e.status = 'failed' and e.error_type = 'timeout')::int, (e.status = 'failed' and e.error_type = 'api_error')::int,
        (e.status = 'failed' and e.error_type = 'validation_error')::int,
        case when e.status in ('success', 'failed') then coalesce(e.duration_ms, 0) else 0 end, 0, 0,
        coalesce(sc.rating_sum, 0), coalesce(sc.rating_count, 0), coalesce(sc.nps_promoters, 0), coalesce(sc.nps_detractors, 0), coalesce(sc.nps_count, 0)
      from executions e
      left join lateral (
        select ${scoreSums('s')} from execution_steps s where s.execution_id = e.id and s.output -> 'scores' is not null
      ) sc on true
      where ${fe.sql} and e.started_at >= ? and e.started_at < ?`);
    params.push(...fe.params, edge.start, edge.end);
    const fm = scopeFilter(scope, 'm', { workflowColumn: "coalesce(x.workflow_id, '')" });
    parts.push(`select date_trunc('hour', m.created_at, 'UTC'), coalesce(x.trigger_id, ''), m.channel, 0, 0, 0, 0, 0, 0, 0, 0,
        (m.direction = 'inbound')::int, (m.direction = 'outbound')::int, 0, 0, 0, 0, 0
      from messages m left join executions x on x.id = m.execution_id
      where ${fm.sql} and m.created_at >= ? and m.created_at < ?`);
    params.push(...fm.params, edge.start, edge.end);
  }
  return { sql: parts.join('\nunion all\n'), params };
}

/**
 * SQL select list summing the rating / NPS answers in `output.scores` of step rows `alias`
 * (the same counters the step trigger adds to the rollups).
 */
export function scoreSums(alias: string): string {
  const each = (field: string, agg: string) =>
    `coalesce(sum((select ${agg} from jsonb_array_elements_text(coalesce(${alias}.output #> '{scores,${field}}', '[]')) v)), 0)::int`;
  return `${each('rating', 'sum(v::int)')} as rating_sum, ${each('rating', 'count(*)')} as rating_count,
          ${each('nps', 'count(*) filter (where v::int >= 9)')} as nps_promoters, ${each('nps', 'count(*) filter (where v::int <= 6)')} as nps_detractors,
          ${each('nps', 'count(*)')} as nps_count`;
}

/** Dimensions the counters can be broken down by. */
export type Dimension = 'bucket' | 'channel' | 'trigger_id' | 'hour_of_day';

const dimensionSql = (by: Dimension, granularity: Granularity) =>
  by === 'bucket' ? bucketSql('f.hour', granularity) : by === 'hour_of_day' ? `to_char(f.hour at time zone 'UTC', 'HH24:00')` : `f.${by}`;

/**
 * Counters over the period: the total (under `total`) and, in the same pass over the facts
 * (grouping sets), summed per value of each dimension in `by`. `granularity` is needed for
 * `bucket` (the bucket label, as daily_metrics' `date`).
 */
export async function sumCountersBy(
  em: EntityManager,
  scope: Scope,
  period: Period,
  by: Dimension[],
  granularity: Granularity = 'day',
): Promise<{ total: Counters } & Partial<Record<Dimension, Map<string, Counters>>>> {
  const dims = [...new Set(by)];
  // Day-aligned answers read the daily tier for whole days; hours of the day need the hourly one.
  const facts = hourlyFacts(scope, period, { days: granularity !== 'hour' && !dims.includes('hour_of_day') });
  const keys = dims.map((d, i) => `${dimensionSql(d, granularity)} as k${i}`);
  const ks = dims.map((_, i) => `k${i}`).join(', ');
  const sums = COUNTER_COLUMNS.map((c) => `coalesce(sum(${c}), 0)::float8 as ${c}`).join(', ');
  const from = `from (select ${[...keys, 'f.*'].join(', ')} from (${facts.sql}) f(hour, trigger_id, channel, ${COUNTER_COLUMNS.join(', ')})) y`;
  const all = (1 << dims.length) - 1;
  const rows = await em.execute<Array<Record<string, unknown>>>(
    dims.length === 0
      ? `select ${all} as g, ${sums} ${from}`
      : `select ${ks}, grouping(${ks}) as g, ${sums} ${from} group by grouping sets ((), ${dims.map((_, i) => `(k${i})`).join(', ')})`,
    facts.params,
  );
  const counters = (r: Record<string, unknown>) => Object.fromEntries(COUNTER_COLUMNS.map((c) => [c, Number(r[c])])) as Counters;
  const out: { total: Counters } & Partial<Record<Dimension, Map<string, Counters>>> = { total: zeroCounters() };
  dims.forEach((d) => (out[d] = new Map()));
  for (const r of rows) {
    // grouping(k0…kn−1) sets bit n−1−i when k_i is aggregated away: all bits = the total row.
    const g = Number(r.g);
    if (g === all) {
      out.total = counters(r);
      continue;
    }
    const i = dims.findIndex((_, j) => ((g >> (dims.length - 1 - j)) & 1) === 0);
    out[dims[i]!]!.set(String(r[`k${i}`]), counters(r));
  }
  return out;
}

/** Counters over the period, summed per value of `by` (none: one total under key ''). */
export async function sumCounters(
  em: EntityManager,
  scope: Scope,
  period: Period,
  by?: Dimension,
  granularity: Granularity = 'day',
): Promise<Map<string, Counters>> {
  const r = await sumCountersBy(em, scope, period, by ? [by] : [], granularity);
  return by ? r[by]! : new Map([['', r.total]]);
}

export const totalOf = (m: Map<string, Counters>) => m.get('') ?? zeroCounters();
export const countersOr0 = (c: Counters | undefined) => c ?? zeroCounters();

/** The merged latency histogram of executions that finished (success or failed) among those started in the period. */
export async function latencyHistogram(em: EntityManager, scope: Scope, period: Period): Promise<Histogram> {
  const { whole, edges } = split(period, HOUR_MS);
  const counts = new Map<number, number>();
  const add = (b: number, n: number) => counts.set(b, (counts.get(b) ?? 0) + n);
  const reads: Array<Promise<void>> = [];
  if (whole) {
    // Merged here rather than in SQL: unnesting every hour's array costs more than parsing them.
    const f = scopeFilter(scope, 'h');
    reads.push(
      em
        .execute<Array<{ lo: number; counts: string }>>(
          `select array_lower(h.latency_hist, 1) as lo, array_to_string(h.latency_hist, ',', '0') as counts from analytics_hourly h
            where ${f.sql} and h.hour >= ? and h.hour < ? and cardinality(h.latency_hist) > 0`,
          [...f.params, whole.start, whole.end],
        )
        .then((rows) => {
          for (const r of rows) r.counts.split(',').forEach((n, i) => n !== '0' && add(r.lo + i, Number(n)));
        }),
    );
  }
  for (const edge of edges) {
    const f = scopeFilter(scope, 'e');
    reads.push(
      em
        .execute<Array<{ b: number; n: number }>>(
          `select analytics_latency_bucket(e.duration_ms) as b, count(*)::int as n from executions e
            where ${f.sql} and e.started_at >= ? and e.started_at < ? and e.status in ('success', 'failed') group by 1`,
          [...f.params, edge.start, edge.end],
        )
        .then((rows) => rows.forEach((r) => add(r.b, r.n))),
    );
  }
  await Promise.all(reads);
  return [...counts].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
}

/**
 * What /performance needs by hour, over the period: starts per clock hour (keys as
 * `bucketLabel(…, 'hour')`; the peak), starts per UTC hour of day (`HH:00`) and the merged
 * latency histogram. Whole UTC days come from `analytics_daily` (`started_by_hour`,
 * `latency_hist`: a year is ~365 rows per key, not ~8760), the partial edge days from the
 * hours (`analytics_hourly` and the live edge hours), as every other read.
 */
export async function hourlyShape(
  em: EntityManager,
  scope: Scope,
  period: Period,
): Promise<{ byClockHour: Map<string, number>; byHourOfDay: Map<string, number>; histogram: Histogram }> {
  const { whole, edges } = split(period, DAY_MS);
  const byClockHour = new Map<string, number>();
  const hist = new Map<number, number>();
  const addStarts = (label: string, n: number) => byClockHour.set(label, (byClockHour.get(label) ?? 0) + n);
  const addHist = (b: number, n: number) => hist.set(b, (hist.get(b) ?? 0) + n);
  const reads: Array<Promise<void>> = [];
  if (whole) {
    const f = scopeFilter(scope, 'd');
    reads.push(
      em
        .execute<Array<{ day: string; lo: number | null; hours: string; hlo: number | null; hist: string }>>(
          // Parsed here, as the hourly histograms are: cheaper than unnesting the arrays in SQL.
          `select to_char(d.day, 'YYYY-MM-DD') as day, array_lower(d.started_by_hour, 1) as lo, array_to_string(d.started_by_hour, ',', '0') as hours,
                  array_lower(d.latency_hist, 1) as hlo, array_to_string(d.latency_hist, ',', '0') as hist
             from analytics_daily d
            where ${f.sql} and d.day >= ?::date and d.day < ?::date and (cardinality(d.started_by_hour) > 0 or cardinality(d.latency_hist) > 0)`,
          [...f.params, isoDay(whole.start), isoDay(whole.end)],
        )
        .then((rows) => {
          for (const r of rows) {
            if (r.lo !== null) {
              r.hours.split(',').forEach((n, i) => n !== '0' && addStarts(`${r.day}T${String(r.lo! + i).padStart(2, '0')}:00:00Z`, Number(n)));
            }
            if (r.hlo !== null) r.hist.split(',').forEach((n, i) => n !== '0' && addHist(r.hlo! + i, Number(n)));
          }
        }),
    );
  }
  for (const edge of edges) {
    reads.push(
      sumCountersBy(em, scope, edge, ['bucket'], 'hour').then((r) => {
        for (const [label, c] of r.bucket!) addStarts(label, c.started);
      }),
      latencyHistogram(em, scope, edge).then((h) => h.forEach(([b, n]) => addHist(b, n))),
    );
  }
  await Promise.all(reads);
  const byHourOfDay = new Map<string, number>();
  for (const [label, n] of byClockHour) byHourOfDay.set(`${label.slice(11, 13)}:00`, (byHourOfDay.get(`${label.slice(11, 13)}:00`) ?? 0) + n);
  return { byClockHour, byHourOfDay, histogram: [...hist].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]) };
}

/**
 * Distinct customers of the executions started in the period (or, with `inbound`, of the
 * customers' inbound messages), in total and per bucket. Whole UTC days come from
 * `analytics_customer_days`, the partial edge days from the facts; `hour` buckets read the
 * facts for the whole period (a day's rollup cannot split into hours).
 */
export async function distinctCustomers(
  em: EntityManager,
  scope: Scope & { customerIds?: Sql },
  period: Period,
  opts: { inbound?: boolean; granularity?: Granularity; byChannel?: boolean } = {},
): Promise<{ total: number; byBucket: Map<string, number>; byChannel: Map<string, number>; ids: Sql }> {
  const { whole, edges } = opts.granularity === 'hour' ? { whole: null, edges: [period] } : split(period, DAY_MS);
  const restrict = (alias: string) => (scope.customerIds ? ` and ${alias}.customer_id in (${scope.customerIds.sql})` : '');
  const restrictParams = scope.customerIds?.params ?? [];
  // The live edges (partial days): rows (at, channel, customer_id) read from the facts.
  const edgeParts: string[] = [];
  const edgeParams: unknown[] = [];
  for (const edge of edges) {
    if (opts.inbound) {
      const f = scopeFilter({ organizationId: scope.organizationId, ...(scope.channel ? { channel: scope.channel } : {}) }, 'm');
      edgeParts.push(`select m.created_at, m.channel, m.customer_id from messages m
                   where ${f.sql} and m.direction = 'inbound' and m.created_at >= ? and m.created_at < ?${restrict('m')}`);
      edgeParams.push(...f.params, edge.start, edge.end, ...restrictParams);
    } else {
      const f = scopeFilter(scope, 'e');
      edgeParts.push(`select e.started_at, e.channel, e.customer_id from executions e
                   where ${f.sql} and e.customer_id is not null and e.started_at >= ? and e.started_at < ?${restrict('e')}`);
      edgeParams.push(...f.params, edge.start, edge.end, ...restrictParams);
    }
  }
  const parts: string[] = [];
  const params: unknown[] = [];
  if (whole) {
    // A workflow's rows exist only for executions (executions > 0), so they need no filter and
    // the primary key answers the scan index-only; the organization's '' rows hold messages.
    const f = scopeFilter(opts.inbound ? { ...scope, workflowId: '' } : scope, 'd');
    parts.push(`select d.day::timestamp at time zone 'UTC' as at, d.channel, d.customer_id from analytics_customer_days d
                 where ${f.sql} and d.day >= ?::date and d.day < ?::date${opts.inbound ? ' and d.messages_in > 0' : ''}${restrict('d')}`);
    params.push(...f.params, isoDay(whole.start), isoDay(whole.end), ...restrictParams);
  }
  parts.push(...edgeParts);
  params.push(...edgeParams);
  if (parts.length === 0) return { total: 0, byBucket: new Map(), byChannel: new Map(), ids: { sql: 'select null::text where false', params: [] } };
  const rel = `(${parts.join(' union all ')}) c(at, channel, customer_id)`;
  const granularity = opts.granularity ?? 'day';
  const ids = { sql: `select distinct customer_id from ${rel}`, params };
  // One workflow's executions, over whole days, all channels or one, without the per-channel
  // counts (`byChannel: false`): counted from the returns rollup (no set of customers to
  // hash). Other questions (inbound customers, a customer segment, lists of workflows or
  // channels, hour buckets, per-channel counts) count the set.
  const workflowId = scope.workflowId;
  const simple = !opts.inbound && !scope.customerIds && opts.byChannel === false && typeof scope.channel !== 'object';
  if (whole && granularity !== 'hour' && simple && typeof workflowId === 'string' && workflowId !== '') {
    const single = { organizationId: scope.organizationId, workflowId, ...(typeof scope.channel === 'string' ? { channel: scope.channel } : {}) };
    const edgeSql = { sql: edgeParts.join(' union all '), params: edgeParams };
    return { ...(await customersFromReturns(em, single, whole, granularity, edgeSql)), byChannel: new Map(), ids };
  }
  // Distinct counts as hash aggregations over one materialized set (count(distinct) would sort it once per grouping).
  const rows = await em.execute<Array<{ kind: string; key: string; n: number }>>(
    `with c as materialized (select ${bucketSql('at', granularity)} as b, channel, customer_id from ${rel})
     select 'total' as kind, '' as key, count(*)::int as n from (select customer_id from c group by customer_id) x
     union all select 'bucket', b, count(*)::int from (select b, customer_id from c group by b, customer_id) x group by b
     union all select 'channel', channel, count(*)::int from (select channel, customer_id from c group by channel, customer_id) x group by channel`,
    params,
  );
  const pick = (kind: string) => new Map(rows.filter((r) => r.kind === kind).map((r) => [r.key, r.n]));
  return {
    total: rows.find((r) => r.kind === 'total')?.n ?? 0,
    byBucket: pick('bucket'),
    byChannel: pick('channel'),
    ids,
  };
}

/**
 * Distinct customers of one workflow's executions from `analytics_customer_returns` (whole
 * days [A, B)) plus the live edges (`edges`: rows (at, channel, customer_id) of the partial
 * days, or empty). A group covering days [a, b) of the whole range counts the customer-days
 * in it whose previous day (`since_day`) is before a: each customer once, on its first day
 * there. An edge customer adds to a group unless it was seen on one of the group's whole
 * days (an index probe per edge customer on analytics_customer_days).
 */
async function customersFromReturns(
  em: EntityManager,
  scope: { organizationId: string; workflowId: string; channel?: string },
  whole: Period,
  granularity: Exclude<Granularity, 'hour'>,
  edges: Sql,
): Promise<{ total: number; byBucket: Map<string, number> }> {
  const [a, b] = [isoDay(whole.start), isoDay(whole.end)];
  const o = scope.organizationId;
  const w = scope.workflowId;
  // Channel '' holds every channel's customers, each once a day; a channel's rows are its own tier.
  const tier = scope.channel ?? '';
  const bucketStart = `date_trunc('${granularity}', r.day::timestamp)::date`;
  // One scan of the period's rows of the tier: small enough to be planned without parallel workers.
  const reads: Array<Promise<Array<{ kind: string; key: string; n: number }>>> = [
    em.execute(
      `select case when grouping(b) = 1 then 'total' else 'bucket' end as kind, coalesce(to_char(b, 'YYYY-MM-DD'), '') as key,
              (case when grouping(b) = 1 then coalesce(sum(r.customers) filter (where r.since_day < ?::date), 0)
                    else coalesce(sum(r.customers) filter (where r.since_day < greatest(b, ?::date)), 0) end)::int as n
         from (select r.*, ${bucketStart} as b from analytics_customer_returns r
                where r.organization_id = ? and r.workflow_id = ? and r.channel = ? and r.day >= ?::date and r.day < ?::date) r
        group by grouping sets ((), (b))`,
      [a, a, o, w, tier, a, b],
    ),
  ];
  if (edges.sql) {
    // One probe per edge customer and group: was it seen on the group's whole days?
    const inScope = scope.channel ? ' and d.channel = e.channel' : '';
    const bs = `(e.bs at time zone 'UTC')::date`;
    const probe = (from: string, to: string) =>
      `(select 1 from analytics_customer_days d where d.organization_id = ? and d.workflow_id = ? and d.customer_id = e.customer_id
                  and d.day >= ${from} and d.day < ${to}${inScope} limit 1)`;
    reads.push(
      em.execute(
        `with e as materialized (select distinct date_trunc('${granularity}', c.at, 'UTC') as bs, c.channel, c.customer_id from (${edges.sql}) c(at, channel, customer_id)),
              p as materialized (
                select e.*, not exists ${probe('?::date', '?::date')} as fresh,
                       -- A bucket of an edge day has no whole days at day granularity (and a partial
                       -- week or month may have none): no probe then, the customer is new to it.
                       case when greatest(${bs}, ?::date) < least((${bs} + interval '1 ${granularity}')::date, ?::date)
                            then not exists ${probe(`greatest(${bs}, ?::date)`, `least((${bs} + interval '1 ${granularity}')::date, ?::date)`)}
                            else true end as fresh_in_bucket
                  from e)
         select 'total' as kind, '' as key, count(distinct customer_id)::int as n from p where fresh
         union all
         select 'bucket', to_char((bs at time zone 'UTC')::date, 'YYYY-MM-DD'), count(distinct customer_id)::int from p where fresh_in_bucket group by bs`,
        [...edges.params, o, w, a, b, a, b, o, w, a, b],
      ),
    );
  }
  const out = { total: 0, byBucket: new Map<string, number>() };
  for (const rows of await Promise.all(reads)) {
    for (const r of rows) {
      const n = Number(r.n ?? 0);
      if (r.kind === 'total') out.total += n;
      else out.byBucket.set(r.key, (out.byBucket.get(r.key) ?? 0) + n);
    }
  }
  // Groups of nobody are absent, as in the set-based count.
  for (const [k, n] of out.byBucket) if (n === 0) out.byBucket.delete(k);
  return out;
}

/** Mean rating (1–5), 2 decimals; null without answers, never 0. */
export const customerSatisfaction = (c: Counters) => (c.rating_count === 0 ? null : Math.round((c.rating_sum / c.rating_count) * 100) / 100);

/** % promoters (9–10) − % detractors (0–6), −100…100, 1 decimal; null without answers. */
export const netPromoterScore = (c: Counters) =>
  c.nps_count === 0 ? null : Math.round(((c.nps_promoters - c.nps_detractors) / c.nps_count) * 1000) / 10;

/** Mean duration of finished (success or failed) executions, whole ms; 0 when none finished (as workflow metrics). */
export const averageDurationMs = (c: Counters) => (c.succeeded + c.failed === 0 ? 0 : Math.round(c.duration_sum_ms / (c.succeeded + c.failed)));

/**
 * The metric names of workflow analytics' `metrics` (the workflow metrics object's names plus
 * customer_satisfaction and net_promoter_score), in answer order. Reports accept exactly
 * these names.
 */
export const WORKFLOW_METRICS = [
  'total_executions',
  'successful_executions',
  'failed_executions',
  'success_rate',
  'average_duration_ms',
  'total_messages_sent',
  'total_messages_received',
  'unique_customers',
  'channel_breakdown',
  'customer_satisfaction',
  'net_promoter_score',
] as const;
export type WorkflowMetric = (typeof WORKFLOW_METRICS)[number];

/** The workflow metrics' counters from rollup counters (same names and rules as GET /v1/workflows/{id}/metrics). */
export function executionMetrics(c: Counters) {
  return {
    total_executions: c.started,
    successful_executions: c.succeeded,
    failed_executions: c.failed,
    success_rate: successRatio(c.succeeded, c.failed),
    average_duration_ms: averageDurationMs(c),
    total_messages_sent: c.messages_out,
    total_messages_received: c.messages_in,
    customer_satisfaction: customerSatisfaction(c),
    net_promoter_score: netPromoterScore(c),
  };
}

export type WorkflowMetricsValues = ReturnType<typeof executionMetrics> & { unique_customers: number; channel_breakdown: Record<string, number> };

/** Executions per channel, channels without executions left out, in code-point order. */
export const channelBreakdown = (byChannel: Map<string, Counters>): Record<string, number> =>
  Object.fromEntries([...byChannel].filter(([, c]) => c.started > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, c]) => [k, c.started]));

/**
 * Every workflow metric over a scope and period, with its series per `granularity` bucket
 * (empty buckets as zeros): the `metrics` and `daily_metrics` of workflow analytics, and
 * each group of a report. One function, so the two answers cannot drift apart.
 */
export async function workflowMetricsOf(em: EntityManager, scope: Scope, period: Period, granularity: Granularity) {
  const [current, customers] = await Promise.all([
    sumCountersBy(em, scope, period, ['bucket', 'channel'], granularity),
    distinctCustomers(em, scope, period, { granularity, byChannel: false }),
  ]);
  const metrics: WorkflowMetricsValues = { ...executionMetrics(current.total), unique_customers: customers.total, channel_breakdown: channelBreakdown(current.channel!) };
  const series = bucketStarts(period, granularity).map((start) => {
    const label = bucketLabel(start, granularity);
    const c = countersOr0(current.bucket!.get(label));
    return {
      date: label,
      executions: c.started,
      success_rate: successRatio(c.succeeded, c.failed),
      average_duration_ms: averageDurationMs(c),
      messages_sent: c.messages_out,
      messages_received: c.messages_in,
      unique_customers: customers.byBucket.get(label) ?? 0,
    };
  });
  return { counters: current.total, metrics, series };
}

/** Share of finished (success or failed) executions, 4 decimals; 0 when none finished. */
export const shareOfFinished = (n: number, c: Counters) =>
  c.succeeded + c.failed === 0 ? 0 : Math.round((n / (c.succeeded + c.failed)) * 10_000) / 10_000;

/**
 * Trend of a figure against the previous period of equal length: `stable` while the
 * relative change is within ±TREND_THRESHOLD (or either side is null, or both are 0),
 * else `increasing` / `decreasing`.
 */
export const TREND_THRESHOLD = 0.05;
export type Trend = 'increasing' | 'stable' | 'decreasing';
export function trend(current: number | null, previous: number | null): Trend {
  if (current === null || previous === null || current === previous) return 'stable';
  if (previous === 0) return current > 0 ? 'increasing' : 'decreasing';
  const change = (current - previous) / Math.abs(previous);
  if (Math.abs(change) <= TREND_THRESHOLD) return 'stable';
  return change > 0 ? 'increasing' : 'decreasing';
}

/** Step statistics per node from `analytics_node_hourly` (whole hours) and the steps of edge-hour executions. */
export async function nodeCounters(
  em: EntityManager,
  scope: Scope & { workflowId: string },
  period: Period,
): Promise<Array<{ node_id: string; type: string; steps: number; failed_steps: number; duration_sum_ms: number }>> {
  const { whole, edges } = split(period, HOUR_MS);
  const parts: string[] = [];
  const params: unknown[] = [];
  if (whole) {
    parts.push(`select node_id, type, steps, failed_steps, duration_sum_ms from analytics_node_hourly
                 where organization_id = ? and workflow_id = ? and hour >= ? and hour < ?`);
    params.push(scope.organizationId, scope.workflowId, whole.start, whole.end);
  }
  for (const edge of edges) {
    parts.push(`select s.node_id, s.type, 1, (s.status = 'failed')::int, coalesce(s.duration_ms, 0)
                  from executions e join execution_steps s on s.execution_id = e.id
                 where e.organization_id = ? and e.workflow_id = ? and e.started_at >= ? and e.started_at < ?`);
    params.push(scope.organizationId, scope.workflowId, edge.start, edge.end);
  }
  return em.execute(
    `select node_id, type, sum(steps)::int as steps, sum(failed_steps)::int as failed_steps, sum(duration_sum_ms)::float8 as duration_sum_ms
       from (${parts.join(' union all ')}) x group by 1, 2 order by 1, 2`,
    params,
  );
}
