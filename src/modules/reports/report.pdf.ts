/**
 * Owns the PDF of a report, laid out for a reader without the API reference (pdfkit):
 *
 * 1. a title block: name, description, organization, the period and filters in words, the
 *    generation time;
 * 2. a summary table across the groups (a row per group, a column per metric, values with
 *    their units from src/modules/metrics/metric-labels.ts);
 * 3. a section per group: its table and a chart per time-series metric (report.charts.ts,
 *    SVG embedded with svg-to-pdfkit). A section starts on a new page rather than split,
 *    unless it is longer than a page;
 * 4. page numbers in every footer.
 *
 * Loaded by report.render.ts on the first PDF only (pdfkit, ECharts and svg-to-pdfkit cost
 * start-up time every API process would otherwise pay), and run by the worker's report
 * activity, never on an API request.
 */
import type { Writable } from 'node:stream';
import PDFDocument from 'pdfkit';
import SVGtoPDF from 'svg-to-pdfkit';
import type { Granularity } from '../metrics/execution-metrics';
import { formatMetric, METRIC_LABELS } from '../metrics/metric-labels';
import { CHANNELS } from '../workflows/workflow.schemas';
import { CHART_COLOURS, type ChartData, chartData, chartsFor, chartTitle, coarserNote, renderChartSvg } from './report.charts';
import type { ReportData, ReportGroup, ReportMetric, StoredReportRequest } from './report.data';

export { chartGranularityFor } from './report.charts';

export interface ReportPdfInput {
  name: string;
  description: string | null;
  organizationName: string;
  request: StoredReportRequest;
  data: ReportData;
  generatedAt: Date;
}

const MARGIN = 50;
/** Room under the content for the footer line. */
const BOTTOM_MARGIN = 64;
const CHART_HEIGHT = 150;
/** A chart with its title and caption. */
const CHART_BLOCK = CHART_HEIGHT + 40;
/** Metric columns per summary table; more metrics make a second table below the first. */
const SUMMARY_COLUMNS = 4;
const INK = '#111827';
const MUTED = '#4b5563';
const RULE = '#9ca3af';
const ZEBRA = '#f3f4f6';

// ---- words ----

const utcDay = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'long', year: 'numeric' });
const utcDayMonth = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', day: 'numeric', month: 'long' });
const utcTime = new Intl.DateTimeFormat('en-GB', { timeZone: 'UTC', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
const DAY_MS = 86_400_000;

/** "7 December 2026, 14:05 UTC". */
export const momentInWords = (d: Date) => `${utcDay.format(d)}, ${utcTime.format(d)} UTC`;

/**
 * The period as a reader says it: whole UTC days read "1–30 November 2026, UTC" (the end is
 * exclusive, so the last day is the one before it), anything else reads from and to the minute.
 */
export function periodInWords(start: Date, end: Date): string {
  const wholeDays = start.getTime() % DAY_MS === 0 && end.getTime() % DAY_MS === 0;
  if (!wholeDays) return `${momentInWords(start).replace(' UTC', '')} to ${momentInWords(end)}`;
  const last = new Date(end.getTime() - DAY_MS);
  if (last.getTime() === start.getTime()) return `${utcDay.format(start)}, UTC`;
  const sameYear = start.getUTCFullYear() === last.getUTCFullYear();
  if (sameYear && start.getUTCMonth() === last.getUTCMonth()) return `${start.getUTCDate()}–${utcDay.format(last)}, UTC`;
  return `${sameYear ? utcDayMonth.format(start) : utcDay.format(start)} – ${utcDay.format(last)}, UTC`;
}

// Partial: a channel a new provider adds prints as its own name until it is given words here.
const CHANNEL_WORDS: Partial<Record<(typeof CHANNELS)[number], string>> = { whatsapp: 'WhatsApp', instagram: 'Instagram', messenger: 'Messenger', voice: 'Voice', sms: 'SMS' };
export const channelInWords = (c: string) => CHANNEL_WORDS[c as keyof typeof CHANNEL_WORDS] ?? c;

const GRANULARITY_WORDS: Record<Granularity, string> = { hour: 'per hour', day: 'per day', week: 'per week (weeks start on Monday)', month: 'per month' };

function filterLines(input: ReportPdfInput): Array<[string, string]> {
  const { filters, group_by: groupBy } = input.request;
  const names = input.data.workflowNames;
  const grouping = groupBy.map((g) => (g === 'workflow_id' ? 'workflow' : 'channel')).join(' and ');
  const granularity =
    GRANULARITY_WORDS[input.data.granularity] +
    (input.data.chartGranularity !== input.data.granularity ? ` (charts ${GRANULARITY_WORDS[input.data.chartGranularity]})` : '');
  return [
    ['Organization', input.organizationName],
    ['Period', periodInWords(new Date(input.data.period.start_date), new Date(input.data.period.end_date))],
    ['Workflows', filters.workflow_ids?.length ? filters.workflow_ids.map((id) => names[id] || id).join(', ') : 'All workflows'],
    ['Channels', filters.channels?.length ? filters.channels.map(channelInWords).join(', ') : 'All channels'],
    ['Grouped by', grouping ? grouping[0]!.toUpperCase() + grouping.slice(1) : 'Not grouped: one total'],
    ['Values', granularity],
    ['Generated', momentInWords(input.generatedAt)],
  ];
}

/** A group's name: its workflow's name and/or its channel. */
function groupTitle(g: ReportGroup): string {
  const parts = [g.workflow_id !== undefined ? g.workflow_name || g.workflow_id : '', g.channel !== undefined ? channelInWords(g.channel) : ''].filter(Boolean);
  return parts.length ? parts.join(' · ') : 'All executions';
}

// ---- layout ----

type Doc = PDFKit.PDFDocument;

const contentWidth = (doc: Doc) => doc.page.width - doc.page.margins.left - doc.page.margins.right;
const bottomOf = (doc: Doc) => doc.page.height - doc.page.margins.bottom;
const contentHeight = (doc: Doc) => bottomOf(doc) - doc.page.margins.top;

/** A new page unless `height` points still fit on this one. */
function keepTogether(doc: Doc, height: number): void {
  if (doc.y + height > bottomOf(doc)) doc.addPage();
}

function titleBlock(doc: Doc, input: ReportPdfInput): void {
  const left = doc.page.margins.left;
  const width = contentWidth(doc);
  doc.font('Helvetica-Bold').fontSize(20).fillColor(INK).text(input.name, left, doc.y, { width });
  if (input.description) doc.font('Helvetica').fontSize(10).fillColor(MUTED).text(input.description, { width });
  doc.moveDown(0.6);
  const labelWidth = 80;
  for (const [label, value] of filterLines(input)) {
    const y = doc.y;
    doc.font('Helvetica-Bold').fontSize(9.5).fillColor(MUTED).text(label, left, y, { width: labelWidth });
    doc.font('Helvetica').fillColor(INK).text(value, left + labelWidth, y, { width: width - labelWidth });
    doc.y += 2;
  }
  doc.moveDown(0.5);
  rule(doc, doc.y, INK, 1);
  doc.y += 14;
}

function rule(doc: Doc, y: number, colour: string, width = 0.5): void {
  const left = doc.page.margins.left;
  doc.save().moveTo(left, y).lineTo(left + contentWidth(doc), y).lineWidth(width).strokeColor(colour).stroke().restore();
}

function heading(doc: Doc, text: string, size = 14): void {
  doc.font('Helvetica-Bold').fontSize(size).fillColor(INK).text(text, doc.page.margins.left, doc.y, { width: contentWidth(doc) });
  doc.y += 4;
}

interface Column {
  header: string;
  width: number;
  align: 'left' | 'right';
}

const CELL_PAD = 4;
const cellHeight = (doc: Doc, text: string, width: number) => doc.heightOfString(text, { width: width - 2 * CELL_PAD }) + 2 * CELL_PAD;

/** Height of a table, for keeping it with what follows. */
function tableHeight(doc: Doc, columns: Column[], rows: string[][]): number {
  doc.fontSize(9);
  const rowHeight = (cells: string[]) => Math.max(...cells.map((c, i) => cellHeight(doc, c, columns[i]!.width)));
  return rowHeight(columns.map((c) => c.header)) + rows.reduce((s, r) => s + rowHeight(r), 0);
}

/** A table with a header row, rules and zebra rows; a row never splits, and the header repeats on a new page. */
function table(doc: Doc, columns: Column[], rows: string[][]): void {
  const left = doc.page.margins.left;
  const drawRow = (cells: string[], header: boolean, shaded: boolean) => {
    doc.font(header ? 'Helvetica-Bold' : 'Helvetica').fontSize(9);
    const height = Math.max(...cells.map((c, i) => cellHeight(doc, c, columns[i]!.width)));
    const y = doc.y;
    if (shaded) doc.save().rect(left, y, contentWidth(doc), height).fill(ZEBRA).restore();
    let x = left;
    cells.forEach((c, i) => {
      const col = columns[i]!;
      doc.fillColor(header ? MUTED : INK).text(c, x + CELL_PAD, y + CELL_PAD, { width: col.width - 2 * CELL_PAD, align: col.align });
      x += col.width;
    });
    doc.y = y + height;
    if (header) rule(doc, doc.y, INK);
    return height;
  };
  const header = columns.map((c) => c.header);
  drawRow(header, true, false);
  rows.forEach((cells, i) => {
    doc.font('Helvetica').fontSize(9);
    const height = Math.max(...cells.map((c, j) => cellHeight(doc, c, columns[j]!.width)));
    if (doc.y + height > bottomOf(doc)) {
      doc.addPage();
      drawRow(header, true, false);
    }
    drawRow(cells, false, i % 2 === 1);
  });
  rule(doc, doc.y, RULE);
  doc.x = left;
  doc.y += 12;
}

const valueOf = (g: ReportGroup, m: ReportMetric) => formatMetric(m, g.metrics[m], g.answers);

function summary(doc: Doc, input: ReportPdfInput): void {
  const { data, request } = input;
  heading(doc, 'Summary');
  if (data.groups.length === 0) {
    doc.font('Helvetica').fontSize(10).fillColor(INK).text('No executions in this period.');
    return;
  }
  const width = contentWidth(doc);
  const firstHeader = request.group_by.length ? request.group_by.map((g) => (g === 'workflow_id' ? 'Workflow' : 'Channel')).join(' · ') : 'Scope';
  for (let i = 0; i < request.metrics.length; i += SUMMARY_COLUMNS) {
    const metrics = request.metrics.slice(i, i + SUMMARY_COLUMNS);
    const first = Math.max(width - SUMMARY_COLUMNS * 90, width - metrics.length * 110);
    const columns: Column[] = [
      { header: firstHeader, width: first, align: 'left' },
      ...metrics.map((m): Column => ({ header: METRIC_LABELS[m], width: (width - first) / metrics.length, align: 'right' })),
    ];
    const rows = data.groups.map((g) => [groupTitle(g), ...metrics.map((m) => valueOf(g, m))]);
    keepTogether(doc, Math.min(tableHeight(doc, columns, rows), contentHeight(doc)));
    table(doc, columns, rows);
  }
}

function groupSection(doc: Doc, input: ReportPdfInput, g: ReportGroup): void {
  const { data, request } = input;
  const width = contentWidth(doc);
  const columns: Column[] = [
    { header: 'Metric', width: width * 0.55, align: 'left' },
    { header: 'Value', width: width * 0.45, align: 'right' },
  ];
  const rows = request.metrics.map((m) => [METRIC_LABELS[m], valueOf(g, m)]);
  const charts = chartsFor(request.metrics);
  const head = 44;
  const tableH = tableHeight(doc, columns, rows) + 12;
  const whole = head + tableH + charts.length * CHART_BLOCK;
  // The whole section on one page when it fits on one; else at least its table and first chart together.
  if (whole <= contentHeight(doc)) keepTogether(doc, whole);
  else keepTogether(doc, head + tableH + (charts.length ? CHART_BLOCK : 0));

  heading(doc, groupTitle(g), 13);
  const ids = [g.workflow_id !== undefined ? `Workflow ID ${g.workflow_id}` : '', g.channel !== undefined ? `Channel ${g.channel}` : ''].filter(Boolean).join(' · ');
  if (ids) doc.font('Helvetica').fontSize(8.5).fillColor(MUTED).text(ids, { width });
  doc.y += 6;
  table(doc, columns, rows);

  for (const spec of charts) chart(doc, input, chartTitle(spec, data.chartGranularity), chartData(spec, g.chartSeries));
  doc.y += 6;
}

/** A chart with its title, and the note when it is drawn coarser than the report's granularity. */
function chart(doc: Doc, input: ReportPdfInput, title: string, values: ChartData): void {
  const { data } = input;
  const left = doc.page.margins.left;
  const width = contentWidth(doc);
  const note = coarserNote({ start: new Date(data.period.start_date), end: new Date(data.period.end_date) }, data.granularity, data.chartGranularity);
  keepTogether(doc, CHART_BLOCK);
  doc.font('Helvetica-Bold').fontSize(10).fillColor(INK).text(title, left, doc.y, { width });
  if (note) doc.font('Helvetica').fontSize(8).fillColor(MUTED).text(note, { width });
  doc.y += 4;
  SVGtoPDF(doc, renderChartSvg(values, data.chartGranularity, width, CHART_HEIGHT), left, doc.y, { width, height: CHART_HEIGHT, assumePt: true });
  doc.x = left;
  doc.y += CHART_HEIGHT + 14;
}

/**
 * Under the summary table, the groups side by side on the first chart (executions when
 * asked), one line per group: as many groups as a grayscale print tells apart.
 */
function comparison(doc: Doc, input: ReportPdfInput): void {
  const { data, request } = input;
  const first = chartsFor(request.metrics).find((c) => c.series.length === 1);
  if (!first || data.groups.length < 2 || data.groups.length > CHART_COLOURS.length) return;
  const perGroup = data.groups.map((g) => ({ name: groupTitle(g), values: chartData(first, g.chartSeries).series[0]!.values }));
  const by = request.group_by.map((g) => (g === 'workflow_id' ? 'workflow' : 'channel')).join(' and ');
  chart(doc, input, `${chartTitle(first, data.chartGranularity)}, by ${by}`, { unit: first.unit, buckets: data.groups[0]!.chartSeries.map((b) => b.date), series: perGroup });
}

/** `text` cut with an ellipsis to fit `width` on one line in the current font. */
function fitted(doc: Doc, text: string, width: number): string {
  if (doc.widthOfString(text) <= width) return text;
  let n = text.length;
  while (n > 1 && doc.widthOfString(`${text.slice(0, n)}…`) > width) n--;
  return `${text.slice(0, n).trimEnd()}…`;
}

/** Footers once every page exists: the report's name and "Page i of n". */
function footers(doc: Doc, name: string): void {
  const { start, count } = doc.bufferedPageRange();
  for (let i = start; i < start + count; i++) {
    doc.switchToPage(i);
    const left = doc.page.margins.left;
    const width = contentWidth(doc);
    const y = doc.page.height - BOTTOM_MARGIN + 22;
    // Writing below the bottom margin would start a new page.
    const margin = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    rule(doc, y - 6, RULE);
    doc.font('Helvetica').fontSize(8).fillColor(MUTED);
    doc.text(fitted(doc, name, width - 90), left, y, { lineBreak: false });
    doc.text(`Page ${i - start + 1} of ${count}`, left + width - 80, y, { width: 80, align: 'right', lineBreak: false });
    doc.page.margins.bottom = margin;
  }
}

export function renderReportPdf(input: ReportPdfInput, out: Writable): void {
  const doc = new PDFDocument({
    size: 'A4',
    margins: { top: MARGIN, left: MARGIN, right: MARGIN, bottom: BOTTOM_MARGIN },
    bufferPages: true,
    info: { Title: input.name, Author: input.organizationName, Producer: 'Workflow Automation Service' },
  });
  doc.pipe(out);
  titleBlock(doc, input);
  summary(doc, input);
  comparison(doc, input);
  for (const g of input.data.groups) groupSection(doc, input, g);
  footers(doc, input.name);
  doc.end();
}
