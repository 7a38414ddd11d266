/**
 * Owns a report's file: the numbers from report.data.ts rendered as CSV (one row per
 * group, csv-stringify), JSON (the whole result), or PDF (pdfkit: title, period and
 * filters, a table per group and a line chart of each group's granularity series, drawn
 * with pdfkit's own vector operations: no browser, no native canvas).
 * pdfkit is loaded on the first PDF, not with the module: its fonts and layout engine cost
 * about 0.25 s at start-up (more under jest), which every API process and every test file
 * that boots the app would otherwise pay without rendering a PDF.
 */
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { stringify } from 'csv-stringify';
import type { Services } from '../../services';
import type { Granularity } from '../metrics/execution-metrics';
import { computeReportData, type ReportData, type ReportGroup, type ReportGroupBy, type ReportMetric, type ReportMetricValue } from './report.data';
import type { Report } from './report.entity';

export const REPORT_CONTENT_TYPES = { csv: 'text/csv; charset=utf-8', json: 'application/json', pdf: 'application/pdf' } as const;

interface StoredRequest {
  metrics: ReportMetric[];
  filters: { start_date?: string; end_date?: string; workflow_ids?: string[]; channels?: string[] };
  group_by: ReportGroupBy[];
  granularity: Granularity;
}

const groupColumns = (groupBy: ReportGroupBy[]) => [
  ...(groupBy.includes('workflow_id') ? ['workflow_id', 'workflow_name'] : []),
  ...(groupBy.includes('channel') ? ['channel'] : []),
];

function groupLabel(g: ReportGroup): string {
  const parts = [g.workflow_id !== undefined ? `${g.workflow_name || g.workflow_id} (${g.workflow_id})` : '', g.channel ?? ''].filter(Boolean);
  return parts.length ? parts.join(' · ') : 'All executions';
}

/** A CSV cell: a number as it is, no answers (null) as an empty cell, `channel_breakdown` as its JSON object. */
const csvCell = (v: ReportMetricValue | undefined) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : v);

/** A PDF table value: no answers read `n/a`, `channel_breakdown` as `channel: count` pairs. */
const pdfValue = (v: ReportMetricValue | undefined) =>
  v === null || v === undefined
    ? 'n/a'
    : typeof v === 'object'
      ? Object.entries(v)
          .map(([k, n]) => `${k}: ${n}`)
          .join(', ') || 'none'
      : String(v);

function csvRows(req: StoredRequest, data: ReportData): unknown[][] {
  const keys = groupColumns(req.group_by) as Array<'workflow_id' | 'workflow_name' | 'channel'>;
  return data.groups.map((g) => [...keys.map((k) => g[k] ?? ''), ...req.metrics.map((m) => csvCell(g.metrics[m]))]);
}

function renderPdf(report: Report, req: StoredRequest, data: ReportData, generatedAt: Date, out: PassThrough): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const PDFDocument = require('pdfkit') as typeof import('pdfkit');
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: report.name, Producer: 'Workflow Automation Service' } });
  doc.pipe(out);
  const left = doc.page.margins.left;
  const width = doc.page.width - left - doc.page.margins.right;

  doc.fontSize(20).text(report.name);
  if (report.description) doc.fontSize(10).fillColor('#444').text(report.description).fillColor('black');
  doc.moveDown(0.5).fontSize(10);
  doc.text(`Period: ${data.period.start_date} to ${data.period.end_date} (granularity: ${data.granularity})`);
  const f = req.filters;
  doc.text(`Filters: workflows ${f.workflow_ids?.join(', ') || 'all'}; channels ${f.channels?.join(', ') || 'all'}; grouped by ${req.group_by.join(', ') || 'nothing'}`);
  doc.text(`Generated: ${generatedAt.toISOString()}`);
  if (data.groups.length === 0) doc.moveDown().text('No executions in this period.');

  for (const g of data.groups) {
    if (doc.y > doc.page.height - 330) doc.addPage();
    doc.moveDown().fontSize(13).text(groupLabel(g), left);
    doc.fontSize(10).moveDown(0.3);
    // The table: one row per metric, name and value.
    for (const m of req.metrics) {
      const y = doc.y;
      doc.text(m, left, y, { width: width * 0.6 });
      doc.text(pdfValue(g.metrics[m]), left + width * 0.6, y, { width: width * 0.4, align: 'right' });
      doc
        .moveTo(left, doc.y + 2)
        .lineTo(left + width, doc.y + 2)
        .strokeColor('#ccc')
        .lineWidth(0.5)
        .stroke();
      doc.moveDown(0.3);
    }
    drawSeriesChart(doc, g, left, doc.y + 10, width, 140);
  }
  doc.end();
}

/** A line chart of executions per bucket: axes, a scale, the line and its points. */
function drawSeriesChart(doc: PDFKit.PDFDocument, g: ReportGroup, x: number, y: number, width: number, height: number): void {
  const values = g.series.map((s) => s.executions);
  const max = Math.max(1, ...values);
  const plotX = x + 30;
  const plotW = width - 30;
  doc.fontSize(8).fillColor('black').text(`Executions per ${g.series.length > 1 ? 'period' : 'bucket'}`, x, y - 10);
  doc.strokeColor('#000').lineWidth(0.8).moveTo(plotX, y).lineTo(plotX, y + height).lineTo(plotX + plotW, y + height).stroke();
  doc.text(String(max), x, y - 3, { width: 26, align: 'right' });
  doc.text('0', x, y + height - 6, { width: 26, align: 'right' });
  const step = values.length > 1 ? plotW / (values.length - 1) : 0;
  const point = (v: number, i: number): [number, number] => [plotX + (values.length > 1 ? i * step : plotW / 2), y + height - (v / max) * height];
  if (values.length > 0) {
    doc.strokeColor('#1f77b4').lineWidth(1.5);
    values.forEach((v, i) => {
      const [px, py] = point(v, i);
      if (i === 0) doc.moveTo(px, py);
      else doc.lineTo(px, py);
    });
    doc.stroke();
    doc.fillColor('#1f77b4');
    values.forEach((v, i) => {
      const [px, py] = point(v, i);
      doc.circle(px, py, 1.8).fill();
    });
    doc.fillColor('black');
    const first = g.series[0]!.date;
    const last = g.series[g.series.length - 1]!.date;
    doc.text(first, plotX, y + height + 3);
    doc.text(last, plotX + plotW - 100, y + height + 3, { width: 100, align: 'right' });
  }
  doc.x = x;
  doc.y = y + height + 20;
}

/** Computes the report's numbers and writes its file; returns the size and generation time. */
export async function writeReportFile(services: Services, em: EntityManager, report: Report): Promise<{ size: number; generatedAt: Date }> {
  const req = report.request as unknown as StoredRequest;
  const data = await computeReportData(em, {
    organizationId: report.organizationId,
    metrics: req.metrics,
    ...(req.filters.start_date ? { startDate: req.filters.start_date } : {}),
    ...(req.filters.end_date ? { endDate: req.filters.end_date } : {}),
    ...(req.filters.workflow_ids ? { workflowIds: req.filters.workflow_ids } : {}),
    ...(req.filters.channels ? { channels: req.filters.channels } : {}),
    groupBy: req.group_by,
    granularity: req.granularity,
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
        ...data,
      };
      out.end(JSON.stringify(body));
    } else {
      renderPdf(report, req, data, generatedAt, out);
    }
  } catch (err) {
    out.destroy(err as Error);
    await storing.catch(() => undefined);
    throw err;
  }
  const stored = await storing;
  return { size: stored.size, generatedAt };
}
