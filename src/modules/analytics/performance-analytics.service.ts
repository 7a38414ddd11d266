/**
 * GET /v1/analytics/workflows/{id}/performance: execution time percentiles from the latency
 * histograms, throughput and its peak hour, error rates by type and, on request, per node
 * (in path order) and per channel.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from '../../http/zod';
import { averageDurationMs, histogramPercentile, latencyHistogram, nodeCounters, type Scope, shareOfFinished, sumCountersBy } from '../metrics/analytics-metrics';
import { resolvePeriod, successRatio } from '../metrics/execution-metrics';
import { nodePathOrder, periodOut, requireWorkflow } from './analytics.common';
import type { PerformanceQuery } from './analytics.schemas';

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
