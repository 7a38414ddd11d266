/**
 * Owns the numbers of reports and `workflow_metrics` exports, and only how they are
 * grouped: every number comes from the metrics module (`summarizeExecutions`, the same
 * function behind `GET /v1/workflows/{id}/metrics`), so a report's number equals the
 * endpoint's number for the same question. `computeReportData` is the single place to
 * point at other metric sources (e.g. hourly rollups) later.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { type Granularity, resolvePeriod, summarizeExecutions } from '../metrics/execution-metrics';

/** The counters of the metrics module a report can ask for (its `channel_breakdown` is not a number). */
export const REPORT_METRICS = ['total_executions', 'successful_executions', 'failed_executions', 'success_rate', 'average_duration_ms', 'unique_customers'] as const;
export type ReportMetric = (typeof REPORT_METRICS)[number];
export const REPORT_GROUP_BY = ['workflow_id', 'channel'] as const;
export type ReportGroupBy = (typeof REPORT_GROUP_BY)[number];

export interface ReportQuery {
  organizationId: string;
  metrics: readonly ReportMetric[];
  startDate?: string;
  endDate?: string;
  workflowIds?: string[];
  channels?: string[];
  groupBy: readonly ReportGroupBy[];
  granularity: Granularity;
}

export interface ReportGroup {
  workflow_id?: string;
  workflow_name?: string;
  channel?: string;
  metrics: Partial<Record<ReportMetric, number>>;
  series: Array<{ date: string; executions: number; success_rate: number; average_duration_ms: number }>;
}

export interface ReportData {
  period: { start_date: string; end_date: string };
  granularity: Granularity;
  groups: ReportGroup[];
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

export async function computeReportData(em: EntityManager, q: ReportQuery): Promise<ReportData> {
  const period = resolvePeriod(q.startDate, q.endDate);
  const base: string[] = ['organization_id = ?', 'started_at >= ?', 'started_at < ?'];
  const params: unknown[] = [q.organizationId, period.start, period.end];
  if (q.workflowIds?.length) {
    base.push(`workflow_id in (${placeholders(q.workflowIds.length)})`);
    params.push(...q.workflowIds);
  }
  if (q.channels?.length) {
    base.push(`channel in (${placeholders(q.channels.length)})`);
    params.push(...q.channels);
  }

  const byWorkflow = q.groupBy.includes('workflow_id');
  const byChannel = q.groupBy.includes('channel');
  let keys: Array<{ workflow_id?: string; channel?: string }> = [{}];
  if (byWorkflow || byChannel) {
    const cols = [byWorkflow && 'workflow_id', byChannel && 'channel'].filter(Boolean).join(', ');
    keys = await em.execute<Array<{ workflow_id?: string; channel?: string }>>(
      `select distinct ${cols} from executions where ${base.join(' and ')} order by ${cols}`,
      params,
    );
    // A named workflow without executions in the period still gets its (zero) row.
    if (byWorkflow && !byChannel && q.workflowIds) {
      const seen = new Set(keys.map((k) => k.workflow_id));
      keys.push(...q.workflowIds.filter((id) => !seen.has(id)).map((id) => ({ workflow_id: id })));
    }
    // One order whatever the database's collation: ids and channels by code point.
    const byCodePoint = (a = '', b = '') => (a < b ? -1 : a > b ? 1 : 0);
    keys.sort((x, y) => byCodePoint(x.workflow_id, y.workflow_id) || byCodePoint(x.channel, y.channel));
  }
  const names = new Map<string, string>();
  const workflowIds = [...new Set(keys.map((k) => k.workflow_id).filter((id): id is string => id !== undefined))];
  if (workflowIds.length) {
    const rows = await em.execute<Array<{ id: string; name: string }>>(
      `select id, name from workflows where organization_id = ? and id in (${placeholders(workflowIds.length)})`,
      [q.organizationId, ...workflowIds],
    );
    for (const r of rows) names.set(r.id, r.name);
  }

  const groups: ReportGroup[] = [];
  for (const key of keys) {
    const where = [...base];
    const groupParams = [...params];
    if (key.workflow_id !== undefined) {
      where.push('workflow_id = ?');
      groupParams.push(key.workflow_id);
    }
    if (key.channel !== undefined) {
      where.push('channel = ?');
      groupParams.push(key.channel);
    }
    const summary = await summarizeExecutions(
      em,
      { sql: `select status, duration_ms, customer_id, channel, started_at as at from executions where ${where.join(' and ')}`, params: groupParams },
      q.granularity,
      period,
    );
    groups.push({
      ...(key.workflow_id !== undefined ? { workflow_id: key.workflow_id, workflow_name: names.get(key.workflow_id) ?? '' } : {}),
      ...(key.channel !== undefined ? { channel: key.channel } : {}),
      metrics: Object.fromEntries(q.metrics.map((m) => [m, summary.metrics[m]])),
      series: summary.daily_metrics,
    });
  }
  return { period: { start_date: period.start.toISOString(), end_date: period.end.toISOString() }, granularity: q.granularity, groups };
}
