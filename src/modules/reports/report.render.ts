/**
 * Owns a report's file: the numbers from report.data.ts rendered as CSV (one row per
 * group, csv-stringify; headers are the metric names, as clients read them), JSON (the
 * whole result) or PDF (report.pdf.ts).
 * The PDF module (pdfkit, ECharts, svg-to-pdfkit) is loaded on the first PDF, not with this
 * module: its libraries cost start-up time that every API process and every test file that
 * boots the app would otherwise pay without rendering a PDF. Files are written by the
 * worker's report activity only.
 */
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { stringify } from 'csv-stringify';
import type { Services } from '../../services';
import { resolvePeriod } from '../metrics/execution-metrics';
import { Organization } from '../organizations/organization.entity';
import { computeReportData, type ReportData, type ReportGroupBy, type ReportMetricValue, type StoredReportRequest } from './report.data';
import type { Report } from './report.entity';

export const REPORT_CONTENT_TYPES = { csv: 'text/csv; charset=utf-8', json: 'application/json', pdf: 'application/pdf' } as const;

const groupColumns = (groupBy: ReportGroupBy[]) => [
  ...(groupBy.includes('workflow_id') ? ['workflow_id', 'workflow_name'] : []),
  ...(groupBy.includes('channel') ? ['channel'] : []),
];

/** A CSV cell: a number as it is, no answers (null) as an empty cell, `channel_breakdown` as its JSON object. */
const csvCell = (v: ReportMetricValue | undefined) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : v);

function csvRows(req: StoredReportRequest, data: ReportData): unknown[][] {
  const keys = groupColumns(req.group_by) as Array<'workflow_id' | 'workflow_name' | 'channel'>;
  return data.groups.map((g) => [...keys.map((k) => g[k] ?? ''), ...req.metrics.map((m) => csvCell(g.metrics[m]))]);
}

/** The JSON file's groups: what the analytics endpoint answers, without the PDF's extras. */
const jsonGroups = (data: ReportData) => data.groups.map(({ answers: _answers, chartSeries: _chart, ...g }) => g);

/** Computes the report's numbers and writes its file; returns the size and generation time. */
export async function writeReportFile(services: Services, em: EntityManager, report: Report): Promise<{ size: number; generatedAt: Date }> {
  const req = report.request as unknown as StoredReportRequest;
  const data = await computeReportData(em, {
    organizationId: report.organizationId,
    metrics: req.metrics,
    ...(req.filters.start_date ? { startDate: req.filters.start_date } : {}),
    ...(req.filters.end_date ? { endDate: req.filters.end_date } : {}),
    ...(req.filters.workflow_ids ? { workflowIds: req.filters.workflow_ids } : {}),
    ...(req.filters.channels ? { channels: req.filters.channels } : {}),
    groupBy: req.group_by,
    granularity: req.granularity,
    ...(report.format === 'pdf' ? { chartGranularity: pdf().chartGranularityFor(resolvePeriod(req.filters.start_date, req.filters.end_date), req.granularity) } : {}),
  });
  const generatedAt = new Date();
  const out = new PassThrough();
  const storing = services.files.write(report.fileKey!, out, REPORT_CONTENT_TYPES[report.format]);
  try {
    if (report.format === 'csv') {
      await pipeline(Readable.from(csvRows(req, data)), stringify({ header: true, columns: [...groupColumns(req.group_by), ...req.metrics] }), out);
    } else if (report.format === 'json') {
      const body = {
        report_id: report.id,
        name: report.name,
        description: report.description,
        generated_at: generatedAt.toISOString(),
        metrics: req.metrics,
        filters: req.filters,
        group_by: req.group_by,
        period: data.period,
        granularity: data.granularity,
        groups: jsonGroups(data),
      };
      out.end(JSON.stringify(body));
    } else {
      const organization = await em.findOneOrFail(Organization, { id: report.organizationId });
      pdf().renderReportPdf({ name: report.name, description: report.description, organizationName: organization.name, request: req, data, generatedAt }, out);
    }
  } catch (err) {
    out.destroy(err as Error);
    await storing.catch(() => undefined);
    throw err;
  }
  const stored = await storing;
  return { size: stored.size, generatedAt };
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const pdf = () => require('./report.pdf') as typeof import('./report.pdf');
