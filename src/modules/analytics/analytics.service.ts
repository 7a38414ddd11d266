/**
 * Owns the answers of /v1/analytics/*: it picks the scope and period and assembles the
 * response from the definitions in src/modules/metrics (rollups). Engagement sessions and
 * journeys read the messages and executions of the period through their indexes (see
 * docs/analytics.md); realtime reads only bounded, indexed sets.
 */
import os from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from '../../http/zod';
import { invalid, notFound } from '../../errors';
import type { Services } from '../../services';
import { Workflow } from '../workflows/workflow.entity';
import { type Granularity, resolvePeriod, successRatio } from '../metrics/execution-metrics';
import {
  averageDurationMs,
  type Counters,
  customerSatisfaction,
  distinctCustomers,
  executionMetrics,
  histogramPercentile,
  latencyHistogram,
  netPromoterScore,
  nodeCounters,
  type Period,
  previousPeriod,
  scoreSums,
  type Scope,
  shareOfFinished,
  sumCounters,
  sumCountersBy,
  totalOf,
  trend,
  workflowMetricsOf,
  type WorkflowMetricsValues,
} from '../metrics/analytics-metrics';
import type { EngagementQuery, JourneyQuery, PerformanceQuery, WorkflowAnalyticsQuery } from './analytics.schemas';

const periodOut = (p: Period) => ({ start_date: p.start.toISOString(), end_date: p.end.toISOString() });

export async function requireWorkflow(em: EntityManager, organizationId: string, id: string): Promise<Workflow> {
  const wf = await em.findOne(Workflow, { id, organizationId, deletedAt: null });
  if (!wf) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
  return wf;
}

function pickMetrics(all: WorkflowMetricsValues, names?: string[]): Partial<WorkflowMetricsValues> {
  if (!names || names.length === 0) return all;
  return Object.fromEntries(names.map((n) => [n, all[n as keyof WorkflowMetricsValues]]));
}

export async function workflowAnalytics(em: EntityManager, organizationId: string, workflowId: string, q: z.output<typeof WorkflowAnalyticsQuery>) {
  await requireWorkflow(em, organizationId, workflowId);
  const period = resolvePeriod(q.start_date, q.end_date);
  const granularity: Granularity = q.granularity;
  const scope: Scope = { organizationId, workflowId };
  const [current, prev] = await Promise.all([workflowMetricsOf(em, scope, period, granularity), sumCounters(em, scope, previousPeriod(period)).then(totalOf)]);
  const total = current.counters;
  const result: Record<string, unknown> = {
    workflow_id: workflowId,
    period: periodOut(period),
    metrics: pickMetrics(current.metrics, q.metrics),
    trends: {
      execution_trend: trend(total.started, prev.started),
      success_rate_trend: trend(successRatio(total.succeeded, total.failed), successRatio(prev.succeeded, prev.failed)),
      duration_trend: trend(averageDurationMs(total), averageDurationMs(prev)),
    },
    daily_metrics: current.series,
  };
  if (q.group_by && q.group_by.length > 0) result.groups = await groups(em, scope, period, q.group_by as Array<'channel' | 'trigger_id'>, q.metrics);
  return result;
}

/** One group per combination of the group_by values seen in the period. */
async function groups(em: EntityManager, scope: Scope, period: Period, by: Array<'channel' | 'trigger_id'>, names?: string[]) {
  const dims = [...new Set(by)];
  const perDim = await Promise.all(dims.map((d) => sumCounters(em, scope, period, d)));
  if (dims.length === 1) {
    const out = [];
    for (const [k, c] of [...perDim[0]!].sort(([a], [b]) => a.localeCompare(b))) {
      const sub: Scope = dims[0] === 'channel' ? { ...scope, channel: k } : scope;
      const customers = dims[0] === 'channel' ? (await distinctCustomers(em, sub, period)).total : undefined;
      out.push({
        key: { [dims[0]!]: k },
        metrics: pickMetrics(
          {
            ...executionMetrics(c),
            unique_customers: customers ?? (await triggerCustomers(em, scope, period, k)),
            channel_breakdown: dims[0] === 'channel' ? { [k]: c.started } : {},
          },
          names,
        ),
      });
    }
    return out;
  }
  // channel × trigger: counters per pair.
  const out = [];
  const channels = [...perDim[dims.indexOf('channel')]!.keys()].sort();
  for (const channel of channels) {
    const byTrigger = await sumCounters(em, { ...scope, channel }, period, 'trigger_id');
    for (const [t, c] of [...byTrigger].sort(([a], [b]) => a.localeCompare(b))) {
      out.push({
        key: { channel, trigger_id: t },
        metrics: pickMetrics({ ...executionMetrics(c), unique_customers: await triggerCustomers(em, { ...scope, channel }, period, t), channel_breakdown: { [channel]: c.started } }, names),
      });
    }
  }
  return out;
}

/** Distinct customers of one trigger's executions (the customer-day rollup has no trigger dimension: read through the workflow index). */
async function triggerCustomers(em: EntityManager, scope: Scope, period: Period, triggerId: string): Promise<number> {
  const [row] = await em.execute<Array<{ n: number }>>(
    `select count(distinct customer_id)::int as n from executions
      where organization_id = ? and workflow_id = ? and started_at >= ? and started_at < ? and coalesce(trigger_id, '') = ?${scope.channel ? ' and channel = ?' : ''}`,
    [scope.organizationId, scope.workflowId, period.start, period.end, triggerId, ...(scope.channel ? [scope.channel] : [])],
  );
  return row?.n ?? 0;
}

export async function workflowPerformance(em: EntityManager, organizationId: string, workflowId: string, q: z.output<typeof PerformanceQuery>) {
  const wf = await requireWorkflow(em, organizationId, workflowId);
  const period = resolvePeriod(q.start_date, q.end_date);
  const scope: Scope = { organizationId, workflowId };
  const [counters, hist, nodes] = await Promise.all([
    sumCountersBy(em, scope, period, ['bucket', 'hour_of_day', ...(q.include_channels ? (['channel'] as const) : [])], 'hour'),
    latencyHistogram(em, scope, period),
    q.include_nodes ? nodeCounters(em, { organizationId, workflowId }, period) : undefined,
  ]);
  const { total } = counters;
  const byClockHour = counters.bucket!;
  const byHourOfDay = counters.hour_of_day!;
  const byChannel = counters.channel;
  const hours = (period.end.getTime() - period.start.getTime()) / 3600_000;
  let peak: [string, number] | undefined;
  for (const [k, c] of [...byHourOfDay].sort(([a], [b]) => a.localeCompare(b))) if (c.started > (peak?.[1] ?? 0)) peak = [k, c.started];
  const performance: Record<string, unknown> = {
    execution_time: {
      average_ms: averageDurationMs(total),
      median_ms: histogramPercentile(hist, 0.5),
      p95_ms: histogramPercentile(hist, 0.95),
      p99_ms: histogramPercentile(hist, 0.99),
    },
    throughput: {
      executions_per_hour: Math.round((total.started / hours) * 100) / 100,
      peak_executions_per_hour: Math.max(0, ...[...byClockHour.values()].map((c) => c.started)),
      peak_hour: peak?.[0] ?? null,
    },
    error_rate: {
      overall: shareOfFinished(total.failed, total),
      by_error_type: {
        timeout: shareOfFinished(total.timeout_errors, total),
        api_error: shareOfFinished(total.api_errors, total),
        validation_error: shareOfFinished(total.validation_errors, total),
      },
    },
  };
  if (nodes) {
    // Path order: follow `next` from the first node; nodes no longer in the revision go last.
    const order = nodePathOrder(wf);
    const rank = (id: string) => (order.indexOf(id) === -1 ? order.length : order.indexOf(id));
    performance.node_performance = nodes
      .sort((a, b) => rank(a.node_id) - rank(b.node_id) || a.node_id.localeCompare(b.node_id))
      .map((n) => ({
        node_id: n.node_id,
        type: n.type,
        execution_count: n.steps,
        success_rate: n.steps === 0 ? 0 : Math.round(((n.steps - n.failed_steps) / n.steps) * 10_000) / 10_000,
        average_duration_ms: n.steps === 0 ? 0 : Math.round(n.duration_sum_ms / n.steps),
        error_count: n.failed_steps,
      }));
  }
  if (byChannel) {
    performance.channel_performance = Object.fromEntries(
      [...byChannel]
        .filter(([, c]) => c.started > 0)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, c]) => [k, { executions: c.started, success_rate: successRatio(c.succeeded, c.failed), average_duration_ms: averageDurationMs(c) }]),
    );
  }
  return { workflow_id: workflowId, period: periodOut(period), performance };
}

/** Node ids in path order from nodes[0]. */
export function nodePathOrder(wf: Workflow): string[] {
  const nodes = wf.configuration?.nodes ?? [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const order: string[] = [];
  for (let n = nodes[0]; n && !order.includes(n.id); n = n.next ? byId.get(n.next) : undefined) order.push(n.id);
  for (const n of nodes) if (!order.includes(n.id)) order.push(n.id);
  return order;
}

/** Customers of a segment: `new` / `returning` relative to the period, or a tag. As SQL returning customer ids. */
function segmentCustomers(organizationId: string, segment: string | undefined, period: Period) {
  if (segment === undefined) return undefined;
  if (segment === 'new') return { sql: 'select id from customers where organization_id = ? and first_seen_at >= ? and first_seen_at < ?', params: [organizationId, period.start, period.end] };
  if (segment === 'returning') return { sql: 'select id from customers where organization_id = ? and first_seen_at < ?', params: [organizationId, period.start] };
  return { sql: 'select id from customers where organization_id = ? and tags @> array[?]::text[]', params: [organizationId, segment] };
}

const SESSION_GAP = '30 minutes';

export async function engagement(em: EntityManager, organizationId: string, q: z.output<typeof EngagementQuery>) {
  const period = resolvePeriod(q.start_date, q.end_date);
  const prevPeriod = previousPeriod(period);
  const one = async (p: Period) => {
    const segment = segmentCustomers(organizationId, q.customer_segment, p);
    const scope = { organizationId, ...(q.channel ? { channel: q.channel } : {}), ...(segment ? { customerIds: segment } : {}) };
    const active = await distinctCustomers(em, scope, p, { inbound: true });
    const restrict = segment ? ` and c.id in (${segment.sql})` : '';
    const channelFilter = q.channel ? ' and c.channel = ?' : '';
    const [counts] = await em.execute<Array<{ total: number; fresh: number }>>(
      `select count(*)::int as total,
              count(*) filter (where c.first_seen_at >= ? and c.id in (${active.ids.sql}))::int as fresh
         from customers c where c.organization_id = ? and c.first_seen_at < ?${channelFilter}${restrict}`,
      [p.start, ...active.ids.params, organizationId, p.end, ...(q.channel ? [q.channel] : []), ...(segment?.params ?? [])],
    );
    // Sessions: messages of one customer on one channel, both directions, gaps of at most 30 minutes.
    const sessions = await em.execute<Array<{ channel: string; sessions: number; seconds: number; messages: number }>>(
      `with m as (
         select m.customer_id, m.channel, m.created_at,
                case when m.created_at - lag(m.created_at) over w > interval '${SESSION_GAP}' or lag(m.created_at) over w is null then 1 else 0 end as starts
           from messages m
          where m.organization_id = ? and m.created_at >= ? and m.created_at < ?${q.channel ? ' and m.channel = ?' : ''}${segment ? ` and m.customer_id in (${segment.sql})` : ''}
         window w as (partition by m.customer_id, m.channel order by m.created_at)),
       s as (select customer_id, channel, created_at, sum(starts) over (partition by customer_id, channel order by created_at) as n from m),
       t as (select channel, extract(epoch from max(created_at) - min(created_at)) as seconds, count(*) as messages from s group by customer_id, channel, n)
       select channel, count(*)::int as sessions, sum(seconds)::float8 as seconds, sum(messages)::int as messages from t group by channel`,
      [organizationId, p.start, p.end, ...(q.channel ? [q.channel] : []), ...(segment?.params ?? [])],
    );
    const scores = await satisfactionByChannel(em, organizationId, p, q.channel, segment);
    return { active, counts: counts ?? { total: 0, fresh: 0 }, sessions, scores };
  };
  const [cur, prev] = await Promise.all([one(period), one(prevPeriod)]);
  const sessionCount = cur.sessions.reduce((s, r) => s + r.sessions, 0);
  const round2 = (n: number) => Math.round(n * 100) / 100;
  const allScores = cur.scores.get('') ?? null;
  const channels = new Set([...cur.active.byChannel.keys(), ...cur.sessions.map((s) => s.channel)]);
  return {
    period: periodOut(period),
    engagement: {
      total_customers: cur.counts.total,
      active_customers: cur.active.total,
      new_customers: cur.counts.fresh,
      returning_customers: cur.active.total - cur.counts.fresh,
      average_session_duration: sessionCount === 0 ? 0 : round2(cur.sessions.reduce((s, r) => s + r.seconds, 0) / sessionCount),
      average_messages_per_session: sessionCount === 0 ? 0 : round2(cur.sessions.reduce((s, r) => s + r.messages, 0) / sessionCount),
      customer_satisfaction: allScores ? customerSatisfaction(allScores) : null,
      net_promoter_score: allScores ? netPromoterScore(allScores) : null,
      engagement_by_channel: Object.fromEntries(
        [...channels].sort().map((ch) => {
          const s = cur.sessions.find((r) => r.channel === ch);
          const sc = cur.scores.get(ch);
          return [
            ch,
            {
              customers: cur.active.byChannel.get(ch) ?? 0,
              average_session_duration: s && s.sessions > 0 ? round2(s.seconds / s.sessions) : 0,
              satisfaction: sc ? customerSatisfaction(sc) : null,
            },
          ];
        }),
      ),
    },
    trends: {
      customer_growth: trend(cur.counts.fresh, prev.counts.fresh),
      engagement_trend: trend(cur.active.total, prev.active.total),
      satisfaction_trend: trend(allScores ? customerSatisfaction(allScores) : null, prev.scores.get('') ? customerSatisfaction(prev.scores.get('')!) : null),
    },
  };
}

/**
 * Rating/NPS counters per channel ('' = all). Without a segment they come from the hourly
 * rollups; a segment (a set of customers) is not a rollup dimension, so its answers are read
 * from the form steps of its customers' executions in the period.
 */
async function satisfactionByChannel(em: EntityManager, organizationId: string, p: Period, channel: string | undefined, segment: { sql: string; params: unknown[] } | undefined) {
  const scope: Scope = { organizationId, ...(channel ? { channel } : {}) };
  if (!segment) {
    const byChannel = await sumCounters(em, scope, p, 'channel');
    const all = await sumCounters(em, scope, p).then(totalOf);
    return new Map<string, Counters>([['', all], ...byChannel]);
  }
  const rows = await em.execute<Array<Counters & { channel: string }>>(
    `select e.channel, ${scoreSums('s')}
       from executions e join execution_steps s on s.execution_id = e.id
      where e.organization_id = ? and e.started_at >= ? and e.started_at < ? and s.output -> 'scores' is not null${channel ? ' and e.channel = ?' : ''}
        and e.customer_id in (${segment.sql})
      group by rollup (e.channel)`,
    [organizationId, p.start, p.end, ...(channel ? [channel] : []), ...segment.params],
  );
  return new Map(rows.map((r) => [r.channel ?? '', r as Counters]));
}

const CONVERSATION_STEPS = ['message_received', 'execution_started', 'first_reply_sent', 'input_collected', 'completed'] as const;

/** Why a journey stopped, from its execution (or the lack of one). */
const REASON_SQL = `case
  when x.id is null then 'no workflow matched'
  when x.status = 'cancelled' then 'cancelled'
  when x.status = 'failed' and x.error_type = 'timeout' then 'no reply before the form timed out'
  when x.status = 'failed' then coalesce(x.error_type, 'failed')
  when x.status = 'running' then 'still running'
  else 'completed' end`;

export async function journey(em: EntityManager, organizationId: string, q: z.output<typeof JourneyQuery>) {
  const period = resolvePeriod(q.start_date, q.end_date);
  // One row per journey: how many steps it completed in order, the time to each, and its stop reason.
  let rows: Array<{ reached: number; t: Array<number | null>; reason: string; duration: number | null }>;
  let names: string[];
  if (q.journey_type === 'workflow') {
    if (!q.workflow_id) throw invalid('workflow_id is required with journey_type=workflow', 'workflow_id', 'MISSING_REQUIRED_FIELD');
    const wf = await requireWorkflow(em, organizationId, q.workflow_id);
    names = nodePathOrder(wf);
    const raw = await em.execute<Array<{ nodes: Record<string, number> | null; reason: string; duration: number | null }>>(
      `select ${REASON_SQL} as reason, x.duration_ms as duration,
              (select jsonb_object_agg(s.node_id, coalesce(s.duration_ms, 0)) from execution_steps s where s.execution_id = x.id and s.status = 'completed') as nodes
         from executions x where x.organization_id = ? and x.workflow_id = ? and x.started_at >= ? and x.started_at < ?`,
      [organizationId, wf.id, period.start, period.end],
    );
    rows = raw.map((r) => {
      let reached = 0;
      const t: Array<number | null> = [];
      for (const id of names) {
        if (r.nodes?.[id] === undefined) break;
        reached++;
        t.push(r.nodes[id]!);
      }
      return { reached, t, reason: r.reason, duration: r.reason === 'completed' ? r.duration : null };
    });
  } else {
    names = [...CONVERSATION_STEPS];
    // Journeys start with a customer's conversation-opening message (not a form reply) and follow the first execution it started.
    const raw = await em.execute<Array<{ reason: string; t2: number | null; t3: number | null; t4: number | null; t5: number | null }>>(
      `select ${REASON_SQL} as reason,
              extract(epoch from x.started_at - m.created_at) * 1000 as t2,
              extract(epoch from o.created_at - m.created_at) * 1000 as t3,
              extract(epoch from coalesce(r.created_at, case when x.status = 'success' then x.completed_at end) - m.created_at) * 1000 as t4,
              case when x.status = 'success' then extract(epoch from x.completed_at - m.created_at) * 1000 end as t5
         from messages m
         left join executions x on x.id = m.execution_id and x.message_id = m.id
         left join lateral (select created_at from messages o where o.execution_id = x.id and o.direction = 'outbound' order by created_at limit 1) o on true
         left join lateral (select created_at from messages r where r.execution_id = x.id and r.direction = 'inbound' and r.reply_to_wait is not null order by created_at limit 1) r on true
        where m.organization_id = ? and m.direction = 'inbound' and m.reply_to_wait is null and m.created_at >= ? and m.created_at < ?`,
      [organizationId, period.start, period.end],
    );
    rows = raw.map((r) => {
      const t = [0, r.t2, r.t3, r.t4, r.t5];
      let reached = 0;
      while (reached < t.length && t[reached] !== null && t[reached] !== undefined) reached++;
      return { reached, t: t.slice(0, reached), reason: r.reason, duration: r.t5 };
    });
  }
  const total = rows.length;
  const completed = rows.filter((r) => r.reached === names.length).length;
  const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);
  // A journey enters step k once it completed step k − 1 (every journey enters step 1): a
  // customer whose form timed out saw the question, so they entered the form step.
  const entered = (i: number) => rows.filter((r) => r.reached >= i);
  const journeySteps = names.map((name, i) => {
    const completedIt = rows.filter((r) => r.reached > i);
    const times = completedIt.map((r) => Number(r.t[i] ?? 0));
    const enteredIt = entered(i).length;
    return {
      step: i + 1,
      name,
      customers: enteredIt,
      completion_rate: ratio(completedIt.length, enteredIt),
      average_duration_ms: times.length === 0 ? 0 : Math.round(times.reduce((s, v) => s + v, 0) / times.length),
    };
  });
  // Completed journeys: every step reached (the execution succeeded); their duration is message → completion (conversation) or the execution's (workflow).
  const durations = rows.filter((r) => r.reached === names.length && r.duration !== null).map((r) => Number(r.duration));
  const out: Record<string, unknown> = {
    total_journeys: total,
    completed_journeys: completed,
    completion_rate: ratio(completed, total),
    average_journey_duration: durations.length === 0 ? 0 : Math.round(durations.reduce((s, v) => s + v, 0) / durations.length),
    journey_steps: journeySteps,
  };
  if (q.include_dropoffs) {
    // Drop-off at step k: journeys that entered step k and did not complete it.
    out.drop_off_points = names
      .map((name, i) => {
        const stopped = rows.filter((r) => r.reached === i);
        const before = entered(i).length;
        const counts = new Map<string, number>();
        for (const r of stopped) counts.set(r.reason, (counts.get(r.reason) ?? 0) + 1);
        return {
          step: i + 1,
          name,
          drop_off_count: stopped.length,
          drop_off_rate: ratio(stopped.length, before),
          common_reasons: [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3).map(([r]) => r),
        };
      })
      .filter((d) => d.drop_off_count > 0);
  }
  return { period: periodOut(period), journey: out };
}

/** system_health from the readiness checks: all ok → healthy; PostgreSQL ok but another down → degraded. */
export function healthOf(checks: Record<string, 'ok' | 'unavailable'>): 'healthy' | 'degraded' | 'unhealthy' {
  if (checks.postgres !== 'ok') return 'unhealthy';
  return Object.values(checks).every((v) => v === 'ok') ? 'healthy' : 'degraded';
}

let cpuSample = { at: process.hrtime.bigint(), usage: process.cpuUsage() };

/** This process's own figures (admin only). */
export async function systemMetrics(services: Services) {
  const now = process.hrtime.bigint();
  const usage = process.cpuUsage();
  const wallUs = Number(now - cpuSample.at) / 1000;
  const cpuUs = usage.user - cpuSample.usage.user + (usage.system - cpuSample.usage.system);
  cpuSample = { at: now, usage };
  const metric = await services.metrics.duration.get();
  let sum = 0;
  let count = 0;
  for (const v of metric.values) {
    if (v.metricName === 'http_request_duration_seconds_sum') sum += v.value;
    if (v.metricName === 'http_request_duration_seconds_count') count += v.value;
  }
  return {
    cpu_usage: wallUs <= 0 ? 0 : Math.round((cpuUs / wallUs) * 1000) / 1000,
    memory_usage: Math.round((process.memoryUsage.rss() / os.totalmem()) * 1000) / 1000,
    api_response_time_ms: count === 0 ? 0 : Math.round((sum / count) * 1000 * 100) / 100,
  };
}

/**
 * The realtime object. Bounded sets only: running executions through their partial index,
 * messages of the last hour through (organization_id, created_at).
 */
export async function realtime(em: EntityManager, organizationId: string, q: { workflow_id?: string; channel?: string }, health: () => Promise<'healthy' | 'degraded' | 'unhealthy'>) {
  if (q.workflow_id) await requireWorkflow(em, organizationId, q.workflow_id);
  const wfFilter = q.workflow_id ? ' and workflow_id = ?' : '';
  const chFilter = q.channel ? ' and channel = ?' : '';
  const extra = [...(q.workflow_id ? [q.workflow_id] : []), ...(q.channel ? [q.channel] : [])];
  const [workflows, running, recent, systemHealth] = await Promise.all([
    em.execute<Array<{ id: string; name: string }>>(
      `select id, name from workflows where organization_id = ? and status = 'active' and deleted_at is null${q.workflow_id ? ' and id = ?' : ''}${chFilter} order by name`,
      [organizationId, ...extra],
    ),
    em.execute<Array<{ workflow_id: string; channel: string; n: number; customers: number }>>(
      `select workflow_id, channel, count(*)::int as n, count(distinct customer_id)::int as customers from executions
        where organization_id = ? and status = 'running'${wfFilter}${chFilter} group by 1, 2`,
      [organizationId, ...extra],
    ),
    // Each inbound message of the last hour with the delay of the first outbound message to its customer after it.
    em.execute<Array<{ workflow_id: string | null; channel: string; inbound: number; customers: number; replies: number; reply_ms: number }>>(
      `select x.workflow_id, m.channel, count(*)::int as inbound, count(distinct m.customer_id)::int as customers,
              count(o.created_at)::int as replies, coalesce(sum(extract(epoch from o.created_at - m.created_at) * 1000), 0)::float8 as reply_ms
         from messages m
         left join executions x on x.id = m.execution_id
         left join lateral (select created_at from messages o where o.customer_id = m.customer_id and o.direction = 'outbound'
                               and o.created_at >= m.created_at and o.created_at < m.created_at + interval '1 hour'
                             order by o.created_at limit 1) o on true
        where m.organization_id = ? and m.direction = 'inbound' and m.created_at >= now() - interval '1 hour'${q.workflow_id ? ' and x.workflow_id = ?' : ''}${q.channel ? ' and m.channel = ?' : ''}
        group by 1, 2`,
      [organizationId, ...extra],
    ),
    health(),
  ]);
  const sum = <T>(rows: T[], f: (r: T) => number) => rows.reduce((s, r) => s + f(r), 0);
  const avgReply = (rows: typeof recent) => {
    const n = sum(rows, (r) => r.replies);
    return n === 0 ? 0 : Math.round(sum(rows, (r) => r.reply_ms) / n);
  };
  const channels = new Set([...running.map((r) => r.channel), ...recent.map((r) => r.channel)]);
  return {
    timestamp: new Date().toISOString(),
    current_metrics: {
      active_workflows: workflows.length,
      active_executions: sum(running, (r) => r.n),
      messages_in_last_hour: sum(recent, (r) => r.inbound),
      average_response_time_ms: avgReply(recent),
      system_health: systemHealth,
    },
    workflow_metrics: workflows.map((w) => {
      const mine = recent.filter((r) => r.workflow_id === w.id);
      return {
        workflow_id: w.id,
        name: w.name,
        active_executions: sum(
          running.filter((r) => r.workflow_id === w.id),
          (r) => r.n,
        ),
        messages_in_last_hour: sum(mine, (r) => r.inbound),
        average_response_time_ms: avgReply(mine),
      };
    }),
    channel_metrics: Object.fromEntries(
      [...channels].sort().map((ch) => [
        ch,
        {
          active_conversations: sum(
            running.filter((r) => r.channel === ch),
            (r) => r.customers,
          ),
          messages_in_last_hour: sum(
            recent.filter((r) => r.channel === ch),
            (r) => r.inbound,
          ),
        },
      ]),
    ),
  };
}
