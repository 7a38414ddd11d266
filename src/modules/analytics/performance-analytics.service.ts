/**
 * GET /v1/analytics/workflows/{id}/performance: execution time percentiles from the latency
 * histograms, throughput and its peak hour, error rates by type and, on request, per node
 * (in path order) and per channel.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from '../../http/zod';
import { averageDurationMs, histogramPercentile, hourlyShape, nodeCounters, type Scope, shareOfFinished, sumCountersBy } from '../metrics/analytics-metrics';
import { successRatio } from '../metrics/execution-metrics';
import { nodePathOrder, periodOut, requireWorkflow, workflowPeriod } from './analytics.common';
import type { PerformanceQuery } from './analytics.schemas';
import { ChannelErrorTypes } from '../../../temporal/failure-types';

/** Our own constant (letters and `_`), written into the SQL below. */
const WINDOW_CLOSED = ChannelErrorTypes.windowClosed;

/**
 * The workflow's finished executions of the period that failed on a closed customer service
 * window (their failed step's error type; the execution's own is `api_error`). Read from the
 * facts through two partial indexes (Migration20261222000100), not the rollups, which keep
 * the execution's three types only.
 */
async function windowClosedFailures(em: EntityManager, organizationId: string, workflowId: string, period: { start: Date; end: Date }): Promise<number> {
  // The predicates are written out (not parameters) so that they match the partial indexes
  // of Migration20261222000100: the planner reads the organization's window-closed steps or
  // the workflow's failed api_error executions of the period, not every execution.
  const [row] = await em.getConnection().execute<Array<{ n: number }>>(
    `select count(*)::int as n from executions e
      where e.organization_id = ? and e.workflow_id = ? and e.started_at >= ? and e.started_at < ? and e.status = 'failed' and e.error_type = 'api_error'
        and exists (select 1 from execution_steps s
                     where s.organization_id = e.organization_id and s.execution_id = e.id and s.status = 'failed' and s.error_type = '${WINDOW_CLOSED}')`,
    [organizationId, workflowId, period.start, period.end],
  );
  return row?.n ?? 0;
}

export async function workflowPerformance(em: EntityManager, organizationId: string, workflowId: string, q: z.output<typeof PerformanceQuery>) {
  const period = await workflowPeriod(em, organizationId, workflowId, q.start_date, q.end_date);
  const scope: Scope = { organizationId, workflowId };
  // The workflow is looked up alongside the reads (one round trip less): they are scoped to
  // the organization, so an unknown or foreign workflow reads nothing and answers 404.
  const [wf, counters, shape, nodes, windowClosed] = await Promise.all([
    requireWorkflow(em, organizationId, workflowId),
    // No hour in these: whole days from the daily tier.
    sumCountersBy(em, scope, period, q.include_channels ? ['channel'] : [], 'day'),
    hourlyShape(em, scope, period),
    q.include_nodes ? nodeCounters(em, { organizationId, workflowId }, period) : undefined,
    windowClosedFailures(em, organizationId, workflowId, period),
  ]);
  const { total } = counters;
  const { byClockHour, byHourOfDay, histogram: hist } = shape;
  const byChannel = counters.channel;
  const hours = (period.end.getTime() - period.start.getTime()) / 3600_000;
  let peak: [string, number] | undefined;
  for (const [k, n] of [...byHourOfDay].sort(([a], [b]) => a.localeCompare(b))) if (n > (peak?.[1] ?? 0)) peak = [k, n];
  const performance: Record<string, unknown> = {
    execution_time: {
      average_ms: averageDurationMs(total),
      median_ms: histogramPercentile(hist, 0.5),
      p95_ms: histogramPercentile(hist, 0.95),
      p99_ms: histogramPercentile(hist, 0.99),
    },
    throughput: {
      executions_per_hour: Math.round((total.started / hours) * 100) / 100,
      peak_executions_per_hour: Math.max(0, ...byClockHour.values()),
      peak_hour: peak?.[0] ?? null,
    },
    error_rate: {
      overall: shareOfFinished(total.failed, total),
      by_error_type: {
        timeout: shareOfFinished(total.timeout_errors, total),
        // A window-closed failure is an api_error execution; it is counted in its own bucket instead.
        api_error: shareOfFinished(Math.max(0, total.api_errors - windowClosed), total),
        validation_error: shareOfFinished(total.validation_errors, total),
        window_closed: shareOfFinished(windowClosed, total),
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
