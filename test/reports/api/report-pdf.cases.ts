/**
 * The PDF of a report as its reader sees it, from the fixture of test/reports/report-fixture.ts
 * (the issue's two survey workflows, hourly over November 2026) rendered to PNG pages by
 * pdf.js: labels and units in the text, nothing drawn or written outside the margins, and
 * the charts' SVG with axes, gridlines and one series per line of the legend.
 */
import { PassThrough } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { CHART_COLOURS, chartData, chartsFor, renderChartSvg } from '../../../src/modules/reports/report.charts';
import { periodInWords, renderReportPdf, type ReportPdfInput } from '../../../src/modules/reports/report.pdf';
import { pdfPages } from '../../helpers/pdf-pages';
import { fixtureReport } from '../report-fixture';

async function pdfOf(input: ReportPdfInput): Promise<Buffer> {
  const out = new PassThrough();
  const bytes = buffer(out);
  renderReportPdf(input, out);
  return await bytes;
}

/** The series an SVG draws: the chart colours its bars, lines and legend use. */
const seriesColours = (svg: string) => CHART_COLOURS.filter((c) => new RegExp(`(fill|stroke)="${c}"`, 'i').test(svg));
const texts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);

describe('PDF report layout', () => {
  it('reads without the API reference: title block in words, summary first, labels with units, a section per group, page numbers', async () => {
    const pages = await pdfPages(await pdfOf(fixtureReport()), { png: false });
    expect(pages.length).toBe(3);
    const [first, second, third] = pages.map((p) => p.text.replace(/\s+/g, ' '));
    for (const words of ['November surveys', 'Acme Retail', 'Period 1–30 November 2026, UTC', 'Workflows All workflows', 'Grouped by Workflow', 'Generated 1 December 2026, 08:15 UTC'])
      expect(first).toContain(words);
    // The summary across groups comes first, with human labels and units.
    expect(first).toMatch(/Summary Workflow Executions Success rate Customer satisfaction Delivery survey 12 100 % 2.92 \/ 5 \(12 answers\) Store survey 12 83.3 % 4.25 \/ 5 \(12 answers\)/);
    expect(first).toContain('Executions per day, by workflow');
    expect(first).toContain('Shown per day: 720 hourly values are too many for one chart.');
    // One group per page, each with its table and a chart per time-series metric.
    expect(second).toMatch(/^Delivery survey Workflow ID wf_delivery_survey Metric Value Executions 12 Success rate 100 % Customer satisfaction 2.92 \/ 5 \(12 answers\)/);
    expect(second).toContain('Executions per day');
    expect(second).toContain('Success rate per day');
    expect(third).toMatch(/^Store survey /);
    expect(pages.map((p) => p.text.match(/Page \d of \d/)?.[0])).toEqual(['Page 1 of 3', 'Page 2 of 3', 'Page 3 of 3']);
    // No API names, raw timestamps or milliseconds.
    for (const p of pages) expect(p.text).not.toMatch(/total_executions|success_rate|customer_satisfaction|T\d\d:\d\d:\d\d|\.000Z/);
  });

  it('keeps every text run and every drawn pixel inside the page margins', async () => {
    const input = fixtureReport();
    // A long name and description, to be wrapped and never run off the page.
    input.name = `Quarterly customer conversations across every store, delivery route and support queue ${'of the organization '.repeat(3)}`;
    input.description = 'A description long enough to wrap onto several lines. '.repeat(6);
    input.data.groups[0]!.workflow_name = 'A workflow with a very long name that will not fit in the summary table column at all, and must wrap';
    const pages = await pdfPages(await pdfOf(input), { scale: 1, marginPt: 30 });
    for (const page of pages) {
      const outside = page.runs.filter((r) => r.x < 36 || r.x + r.width > page.width - 36 || r.y < 20 || r.y + r.height > page.height - 36);
      expect(outside).toEqual([]);
      expect(page.marginInk).toEqual({ left: 0, right: 0, top: 0, bottom: 0 });
      expect(page.ink).toBeGreaterThan(0.01);
      // A PNG of the A4 page at one pixel per point.
      expect(page.png.subarray(1, 4).toString()).toBe('PNG');
      expect(page.png.readUInt32BE(16)).toBe(595);
      expect(Math.abs(page.png.readUInt32BE(20) - 842)).toBeLessThanOrEqual(1);
    }
  });

  it('charts: formatted date axis, unit ticks, gridlines, and a legend only with more than one series', () => {
    const { data } = fixtureReport('hour', 'day');
    const group = data.groups[1]!;
    const [executions, rate] = chartsFor(['total_executions', 'success_rate', 'customer_satisfaction']);
    expect(chartsFor(['customer_satisfaction', 'net_promoter_score', 'channel_breakdown'])).toEqual([]);

    const rateSvg = renderChartSvg(chartData(rate!, group.chartSeries), 'day', 495, 150);
    expect(texts(rateSvg)).toEqual(expect.arrayContaining(['1 Nov', '28 Nov', '0 %', '50 %', '100 %']));
    expect(rateSvg.match(/stroke="#d1d5db"/g)!.length).toBeGreaterThanOrEqual(4);
    expect(seriesColours(rateSvg)).toEqual([CHART_COLOURS[0]]);
    expect(texts(rateSvg)).not.toContain('Success rate');

    const executionsSvg = renderChartSvg(chartData(executions!, group.chartSeries), 'day', 495, 150);
    expect(texts(executionsSvg)).toEqual(expect.arrayContaining(['0', '1', '2', '4 Nov']));

    // Messages sent and received share a chart: two series, a legend naming both.
    const [messages] = chartsFor(['total_messages_sent', 'total_messages_received']);
    const messagesSvg = renderChartSvg(chartData(messages!, group.chartSeries), 'day', 495, 150);
    expect(seriesColours(messagesSvg)).toEqual([CHART_COLOURS[0], CHART_COLOURS[1]]);
    expect(texts(messagesSvg)).toEqual(expect.arrayContaining(['Sent', 'Received']));
  });

  it('writes the period in words', () => {
    const d = (s: string) => new Date(s);
    expect(periodInWords(d('2026-11-01T00:00:00Z'), d('2026-12-01T00:00:00Z'))).toBe('1–30 November 2026, UTC');
    expect(periodInWords(d('2026-11-19T00:00:00Z'), d('2026-11-20T00:00:00Z'))).toBe('19 November 2026, UTC');
    expect(periodInWords(d('2026-10-28T00:00:00Z'), d('2026-11-04T00:00:00Z'))).toBe('28 October – 3 November 2026, UTC');
    expect(periodInWords(d('2025-12-28T00:00:00Z'), d('2026-01-04T00:00:00Z'))).toBe('28 December 2025 – 3 January 2026, UTC');
    expect(periodInWords(d('2026-11-19T12:00:00Z'), d('2026-11-20T12:30:00Z'))).toBe('19 November 2026, 12:00 to 20 November 2026, 12:30 UTC');
  });
});
