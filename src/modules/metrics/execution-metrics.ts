/**
 * Owns the metrics that workflows and triggers share, and the date filters of every list:
 * the reporting period (defaults and INVALID_DATE_RANGE), the granularities, and the counters and time buckets computed
 * over a set of executions. Each caller describes its set as one SQL relation with the
 * columns `status`, `duration_ms`, `customer_id`, `channel` and `at` (the bucketing time).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalid } from '../../errors';
import { isoDateTime } from '../../http/validation';
import { Timestamp } from '../../http/openapi';
import { z } from '../../http/zod';

export const GRANULARITIES = ['hour', 'day', 'week', 'month'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

const DEFAULT_PERIOD_MS = 30 * 24 * 3600 * 1000;

/** Query fields of every metrics endpoint. */
export const metricsQueryFields = {
  start_date: isoDateTime.optional().openapi({ description: 'Default: 30 days before end_date' }),
  end_date: isoDateTime.optional().openapi({ description: 'Default: now' }),
  granularity: z.enum(GRANULARITIES).default('day'),
};

const invalidDateRange = () => invalid('end_date must be after start_date', 'end_date', 'INVALID_DATE_RANGE');

/**
 * A date filter as a half-open interval [from, to). A date-only `end_date` covers its whole
 * (UTC) day, so `start_date=end_date=2026-11-22` is that day; a timestamp is the exclusive
 * end. An empty interval is 400 INVALID_DATE_RANGE.
 */
export function dateFilter(start?: string, end?: string): { from?: Date; to?: Date } {
  const from = start === undefined ? undefined : new Date(start);
  const to = end === undefined ? undefined : new Date(end);
  if (to && /^\d{4}-\d{2}-\d{2}$/.test(end!)) to.setUTCDate(to.getUTCDate() + 1);
  if (from && to && to <= from) throw invalidDateRange();
  return { ...(from ? { from } : {}), ...(to ? { to } : {}) };
}

/** The period a metrics request covers: up to now, 30 days long, unless the client says otherwise. */
export function resolvePeriod(start?: string, end?: string): { start: Date; end: Date } {
  const to = dateFilter(start, end).to ?? new Date();
  const from = start ? new Date(start) : new Date(to.getTime() - DEFAULT_PERIOD_MS);
  if (to <= from) throw invalidDateRange();
  return { start: from, end: to };
}

export interface ExecutionRelation {
  sql: string;
  params: unknown[];
}

export const successRatio = (success: number, failed: number) =>
  success + failed === 0 ? 0 : Math.round((success / (success + failed)) * 10_000) / 10_000;

/** The spec's workflow `success_rate`: `successRatio`, or null for a workflow with no finished execution. */
export const workflowSuccessRate = (success: number, failed: number) => (success + failed === 0 ? null : successRatio(success, failed));

/**
 * `workflowSuccessRate` in SQL, for answers PostgreSQL writes as JSON: the same float8 arithmetic, and
 * `floor(x + 0.5)` rounds ties up as `Math.round` does (PostgreSQL's `round` of a float8
 * rounds them to even). Checked against `successRatio` pair by pair in
 * test/integration/resources/workflows-read.cases.ts.
 */
export const successRateSql = (success: string, failed: string) =>
  `case when ${success} + ${failed} = 0 then null else floor(${success}::float8 / (${success} + ${failed}) * 10000 + 0.5) / 10000 end`;

/** Buckets start at UTC boundaries (week: Monday); hours read `YYYY-MM-DDTHH:00:00Z`, the rest `YYYY-MM-DD`. */
const bucketLabel = (bucket: string, granularity: Granularity) =>
  granularity === 'hour' ? `${bucket.slice(0, 13)}:00:00Z` : bucket.slice(0, 10);

/**
 * Totals over the relation, and one bucket per `granularity` step of `period`, zeros
 * included, so a chart of `daily_metrics` has no holes.
 */
export async function summarizeExecutions(
  em: EntityManager,
  rel: ExecutionRelation,
  granularity: Granularity,
  period: { start: Date; end: Date },
) {
  const from = `(${rel.sql}) x`;
  const counters = `count(*)::int as total,
         count(*) filter (where status = 'success')::int as success,
         count(*) filter (where status = 'failed')::int as failed,
         coalesce(round(avg(duration_ms) filter (where status in ('success', 'failed'))), 0)::int as avg_ms`;
  type Counters = { total: number; success: number; failed: number; avg_ms: number };
  const [totals] = await em.execute<Array<Counters & { customers: number }>>(
    `select ${counters}, count(distinct customer_id)::int as customers from ${from}`,
    rel.params,
  );
  const channels = await em.execute<Array<{ channel: string; n: number }>>(
    `select channel, count(*)::int as n from ${from} group by channel order by channel`,
    rel.params,
  );
  // `granularity` is one of GRANULARITIES (validated), never client text. The period is
  // half-open, so its last bucket is the one holding the instant just before its end.
  const unit = `date_trunc('${granularity}', %s at time zone 'UTC')`;
  const buckets = await em.execute<Array<Counters & { bucket: string }>>(
    `with x as (${rel.sql}),
          b as (select generate_series(${unit.replace('%s', '?::timestamptz')}, ${unit.replace('%s', "(?::timestamptz - interval '1 microsecond')")},
                                       interval '1 ${granularity}') as bucket)
     select to_char(b.bucket, 'YYYY-MM-DD"T"HH24:MI:SS') as bucket,
            count(x.status)::int as total,
            count(*) filter (where x.status = 'success')::int as success,
            count(*) filter (where x.status = 'failed')::int as failed,
            coalesce(round(avg(x.duration_ms) filter (where x.status in ('success', 'failed'))), 0)::int as avg_ms
       from b left join x on ${unit.replace('%s', 'x.at')} = b.bucket
      group by b.bucket order by b.bucket`,
    [...rel.params, period.start, period.end],
  );
  const t = totals ?? { total: 0, success: 0, failed: 0, avg_ms: 0, customers: 0 };
  return {
    metrics: {
      total_executions: t.total,
      successful_executions: t.success,
      failed_executions: t.failed,
      success_rate: successRatio(t.success, t.failed),
      average_duration_ms: t.avg_ms,
      unique_customers: t.customers,
      channel_breakdown: Object.fromEntries(channels.map((c) => [c.channel, c.n])),
    },
    daily_metrics: buckets.map((b) => ({
      date: bucketLabel(b.bucket, granularity),
      executions: b.total,
      success_rate: successRatio(b.success, b.failed),
      average_duration_ms: b.avg_ms,
    })),
  };
}

export const MetricsCountersOut = z.object({
  total_executions: z.number().int(),
  successful_executions: z.number().int(),
  failed_executions: z.number().int(),
  success_rate: z.number(),
  average_duration_ms: z.number().int(),
  unique_customers: z.number().int(),
  channel_breakdown: z.record(z.string(), z.number().int()),
});

export const DailyMetricOut = z.object({
  date: z.string(),
  executions: z.number().int(),
  success_rate: z.number(),
  average_duration_ms: z.number().int(),
});

export const PeriodOut = z.object({ start_date: Timestamp, end_date: Timestamp });
