/**
 * Owns the numbers of reports and `workflow_metrics` exports, and only how they are
 * grouped: every group's numbers come from `workflowMetricsOf` (src/modules/metrics/
 * analytics-metrics.ts), the function behind the `metrics` and `daily_metrics` of
 * `GET /v1/analytics/workflows/{id}`, so a report's number equals the analytics endpoint's
 * number for the same workflow, channel and period.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { type Scope, WORKFLOW_METRICS, type WorkflowMetric, type WorkflowMetricsValues, workflowMetricsOf } from '../metrics/analytics-metrics';
import { type Granularity, resolvePeriod } from '../metrics/execution-metrics';
import type { AnswerCounts } from '../metrics/metric-labels';

/** Every metric of workflow analytics can be reported, under the same name. */
export const REPORT_METRICS = WORKFLOW_METRICS;
export type ReportMetric = WorkflowMetric;
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
  /** A PDF's charts: a coarser granularity when the requested one has too many buckets (report.charts.ts). */
  chartGranularity?: Granularity;
}

/** A report's creation body as stored (`reports.request`): what its workflow computes and renders. */
export interface StoredReportRequest {
  metrics: ReportMetric[];
  filters: { start_date?: string; end_date?: string; workflow_ids?: string[]; channels?: string[] };
  group_by: ReportGroupBy[];
  granularity: Granularity;
}

export type ReportMetricValue = WorkflowMetricsValues[ReportMetric];

export interface ReportGroup {
  workflow_id?: string;
  workflow_name?: string;
  channel?: string;
  metrics: Partial<Record<ReportMetric, ReportMetricValue>>;
  /** The analytics endpoint's `daily_metrics` items. */
  series: ReportSeries;
  /** For the PDF only: the answers behind satisfaction and NPS, and the series at the charts' granularity. */
  answers: AnswerCounts;
  chartSeries: ReportSeries;
}
export type ReportSeries = Awaited<ReturnType<typeof workflowMetricsOf>>['series'];

export interface ReportData {
  period: { start_date: string; end_date: string };
  granularity: Granularity;
  chartGranularity: Granularity;
  groups: ReportGroup[];
  /** Names of the workflows of the filter and the groups (deleted ones too), for the PDF's words. */
  workflowNames: Record<string, string>;
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

export async function computeReportData(em: EntityManager, q: ReportQuery): Promise<ReportData> {
  const period = resolvePeriod(q.startDate, q.endDate);
  // Without a workflow filter a report covers every workflow of the organization (deleted
  // ones too: their executions stay in the numbers), never the messages outside executions.
  const workflowIds = q.workflowIds?.length
    ? q.workflowIds
    : (await em.execute<Array<{ id: string }>>('select id from workflows where organization_id = ? order by id', [q.organizationId])).map((r) => r.id);
  const channels = q.channels?.length ? q.channels : undefined;

  const byWorkflow = q.groupBy.includes('workflow_id');
  const byChannel = q.groupBy.includes('channel');
  let keys: Array<{ workflow_id?: string; channel?: string }> = [{}];
  if (byWorkflow || byChannel) {
    // The groups are the values seen among the executions of the period.
    const base = ['organization_id = ?', 'started_at >= ?', 'started_at < ?'];
    const params: unknown[] = [q.organizationId, period.start, period.end];
    if (q.workflowIds?.length) {
      base.push(`workflow_id in (${placeholders(q.workflowIds.length)})`);
      params.push(...q.workflowIds);
    }
    if (channels) {
      base.push(`channel in (${placeholders(channels.length)})`);
      params.push(...channels);
    }
    const cols = [byWorkflow && 'workflow_id', byChannel && 'channel'].filter(Boolean).join(', ');
    keys = await em.execute<Array<{ workflow_id?: string; channel?: string }>>(`select distinct ${cols} from executions where ${base.join(' and ')}`, params);
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
  const grouped = [...new Set([...keys.map((k) => k.workflow_id).filter((id): id is string => id !== undefined), ...(q.workflowIds ?? [])])];
  if (grouped.length) {
    const rows = await em.execute<Array<{ id: string; name: string }>>(
      `select id, name from workflows where organization_id = ? and id in (${placeholders(grouped.length)})`,
      [q.organizationId, ...grouped],
    );
    for (const r of rows) names.set(r.id, r.name);
  }

  const groups: ReportGroup[] = [];
  for (const key of keys) {
    const scope: Scope = {
      organizationId: q.organizationId,
      workflowId: key.workflow_id ?? workflowIds,
      ...(key.channel !== undefined ? { channel: key.channel } : channels ? { channel: channels } : {}),
    };
    const { counters, metrics, series } = await workflowMetricsOf(em, scope, period, q.granularity);
    const chartGranularity = q.chartGranularity ?? q.granularity;
    groups.push({
      ...(key.workflow_id !== undefined ? { workflow_id: key.workflow_id, workflow_name: names.get(key.workflow_id) ?? '' } : {}),
      ...(key.channel !== undefined ? { channel: key.channel } : {}),
      metrics: Object.fromEntries(q.metrics.map((m) => [m, metrics[m]])),
      series,
      answers: { ratings: counters.rating_count, nps: counters.nps_count },
      // Read again at the coarser bucket, not summed up: rates and distinct customers do not add.
      chartSeries: chartGranularity === q.granularity ? series : (await workflowMetricsOf(em, scope, period, chartGranularity)).series,
    });
  }
  return {
    period: { start_date: period.start.toISOString(), end_date: period.end.toISOString() },
    granularity: q.granularity,
    chartGranularity: q.chartGranularity ?? q.granularity,
    groups,
    workflowNames: Object.fromEntries(names),
  };
}
