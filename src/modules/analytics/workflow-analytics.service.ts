/**
 * GET /v1/analytics/workflows/{id}: a workflow's metrics over the period from the rollups
 * (src/modules/metrics/analytics-metrics.ts), their trends against the previous period,
 * the daily series and, on request, the same metrics per channel and / or trigger.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from '../../http/zod';
import {
  averageDurationMs,
  distinctCustomers,
  executionMetrics,
  type Period,
  previousPeriod,
  type Scope,
  sumCounters,
  totalOf,
  trend,
  workflowMetricsOf,
  type WorkflowMetricsValues,
} from '../metrics/analytics-metrics';
import { type Granularity, successRatio } from '../metrics/execution-metrics';
import { periodOut, requireWorkflow, workflowPeriod } from './analytics.common';
import type { WorkflowAnalyticsQuery } from './analytics.schemas';

function pickMetrics(all: WorkflowMetricsValues, names?: string[]): Partial<WorkflowMetricsValues> {
  if (!names || names.length === 0) return all;
  return Object.fromEntries(names.map((n) => [n, all[n as keyof WorkflowMetricsValues]]));
}

export async function workflowAnalytics(em: EntityManager, organizationId: string, workflowId: string, q: z.output<typeof WorkflowAnalyticsQuery>) {
  const period = await workflowPeriod(em, organizationId, workflowId, q.start_date, q.end_date);
  const granularity: Granularity = q.granularity;
  const scope: Scope = { organizationId, workflowId };
  // The workflow is looked up alongside the reads (one round trip less): they are scoped to
  // the organization, so an unknown or foreign workflow reads nothing and answers 404.
  const [, current, prev] = await Promise.all([
    requireWorkflow(em, organizationId, workflowId),
    workflowMetricsOf(em, scope, period, granularity),
    sumCounters(em, scope, previousPeriod(period)).then(totalOf),
  ]);
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
      const customers = dims[0] === 'channel' ? (await distinctCustomers(em, sub, period, { byChannel: false })).total : undefined;
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
