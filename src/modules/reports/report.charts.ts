/**
 * Owns the charts of a PDF report: which charts the requested metrics make, the bucket they
 * are drawn at, and each chart as SVG from Apache ECharts' server-side renderer (no browser,
 * no native canvas; report.pdf.ts embeds the SVG with svg-to-pdfkit).
 *
 * Readable in grayscale: the series differ by lightness, line style and marker, not only by
 * hue. A granularity that would draw more than MAX_CHART_POINTS buckets (hourly over 30 days
 * is 720) is drawn at the first coarser one that fits, and the chart's caption says so; the
 * CSV and JSON files keep the requested granularity.
 */
import * as echarts from 'echarts';
import { bucketStarts, type Period } from '../metrics/analytics-metrics';
import { GRANULARITIES, type Granularity } from '../metrics/execution-metrics';
import { formatCount, METRIC_LABELS } from '../metrics/metric-labels';
import type { ReportMetric, ReportSeries } from './report.data';

export const MAX_CHART_POINTS = 62;

/** Dark blue, orange and mid gray: three clearly different grays once printed without colour. */
export const CHART_COLOURS = ['#1e3a8a', '#d97706', '#6b7280'] as const;
const LINE_TYPES = ['solid', 'dashed', 'dotted'] as const;
const SYMBOLS = ['circle', 'triangle', 'rect'] as const;

/** The requested granularity, or the first coarser one with at most MAX_CHART_POINTS buckets. */
export function chartGranularityFor(period: Period, requested: Granularity): Granularity {
  const candidates = GRANULARITIES.slice(GRANULARITIES.indexOf(requested));
  return candidates.find((g) => bucketStarts(period, g).length <= MAX_CHART_POINTS) ?? 'month';
}

type Unit = 'count' | 'percent' | 'duration';
export type SeriesField = Exclude<keyof ReportSeries[number], 'date'>;

/** A chart of a report group: its title, unit and series (report.pdf.ts draws one per spec). */
export interface ChartSpec {
  title: string;
  unit: Unit;
  series: Array<{ name: string; field: SeriesField }>;
}

/**
 * The charts the requested metrics make, in request order: every metric with a series
 * (executions, success rate, duration, messages, customers); messages sent and received
 * share one chart. Successful / failed counts, the channel breakdown, satisfaction and NPS
 * have no per-bucket series and appear in the tables only.
 */
export function chartsFor(metrics: readonly ReportMetric[]): ChartSpec[] {
  const out: ChartSpec[] = [];
  const messages: ChartSpec = { title: 'Messages', unit: 'count', series: [] };
  for (const m of metrics) {
    if (m === 'total_executions') out.push({ title: 'Executions', unit: 'count', series: [{ name: METRIC_LABELS[m], field: 'executions' }] });
    if (m === 'success_rate') out.push({ title: METRIC_LABELS[m], unit: 'percent', series: [{ name: METRIC_LABELS[m], field: 'success_rate' }] });
    if (m === 'average_duration_ms') out.push({ title: METRIC_LABELS[m], unit: 'duration', series: [{ name: METRIC_LABELS[m], field: 'average_duration_ms' }] });
    if (m === 'unique_customers') out.push({ title: METRIC_LABELS[m], unit: 'count', series: [{ name: METRIC_LABELS[m], field: 'unique_customers' }] });
    if (m === 'total_messages_sent' || m === 'total_messages_received') {
      if (messages.series.length === 0) out.push(messages);
      messages.series.push({ name: m === 'total_messages_sent' ? 'Sent' : 'Received', field: m === 'total_messages_sent' ? 'messages_sent' : 'messages_received' });
    }
  }
  return out;
}

const PER: Record<Granularity, string> = { hour: 'hour', day: 'day', week: 'week', month: 'month' };
export const chartTitle = (spec: ChartSpec, granularity: Granularity) => `${spec.title} per ${PER[granularity]}`;

/** The caption of a chart drawn coarser than asked, e.g. "Shown per day: 720 hourly values are too many for a chart; the CSV and JSON files keep them." */
export function coarserNote(period: Period, requested: Granularity, drawn: Granularity): string | undefined {
  if (requested === drawn) return undefined;
  const n = bucketStarts(period, requested).length;
  const adjective: Record<Granularity, string> = { hour: 'hourly', day: 'daily', week: 'weekly', month: 'monthly' };
  return `Shown per ${PER[drawn]}: ${formatCount(n)} ${adjective[requested]} values are too many for one chart. The CSV and JSON files keep the ${adjective[requested]} values.`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** An x-axis label of a bucket label (`YYYY-MM-DD` or `YYYY-MM-DDTHH:00:00Z`): "19 Nov 14:00", "19 Nov", "Nov 2026". */
export function bucketAxisLabel(bucket: string, granularity: Granularity): string {
  const [y, m, d] = [Number(bucket.slice(0, 4)), Number(bucket.slice(5, 7)), Number(bucket.slice(8, 10))];
  if (granularity === 'month') return `${MONTHS[m - 1]} ${y}`;
  const day = `${d} ${MONTHS[m - 1]}`;
  return granularity === 'hour' ? `${day} ${bucket.slice(11, 16)}` : day;
}

/** What a chart draws: one value per bucket for each series (null: nothing to draw there). */
export interface ChartData {
  unit: Unit;
  buckets: string[];
  series: Array<{ name: string; values: Array<number | null> }>;
}

/**
 * A spec's series over a group's buckets. A rate or a mean of a bucket without executions is
 * no value (a gap in the line), not 0 %, which would read as a failure.
 */
export function chartData(spec: ChartSpec, series: ReportSeries): ChartData {
  return {
    unit: spec.unit,
    buckets: series.map((b) => b.date),
    series: spec.series.map((s) => ({ name: s.name, values: series.map((b) => (spec.unit !== 'count' && b.executions === 0 ? null : b[s.field])) })),
  };
}

/** The axis of a duration chart reads seconds or minutes, whichever suits the largest value. */
function durationScale(values: Array<number | null>): { divisor: number; suffix: string } {
  return Math.max(0, ...values.map((v) => v ?? 0)) >= 120_000 ? { divisor: 60_000, suffix: 'min' } : { divisor: 1000, suffix: 's' };
}

/** One chart as an SVG document of `width` × `height` (PDF points). */
export function renderChartSvg(data: ChartData, granularity: Granularity, width: number, height: number): string {
  const duration = data.unit === 'duration' ? durationScale(data.series.flatMap((s) => s.values)) : undefined;
  const scale = (x: number) => (data.unit === 'percent' ? Math.round(x * 1000) / 10 : duration ? Math.round((x / duration.divisor) * 100) / 100 : x);
  const axisText = { color: '#374151', fontSize: 9, fontFamily: 'Helvetica' };
  const legend = data.series.length > 1;
  // Bars for counts (a count per bucket), lines for rates and durations.
  const bars = data.unit === 'count';
  const points = data.buckets.length;
  // Long names (workflows) are shortened; the legend wraps onto as many rows as it needs, above the plot.
  const names = data.series.map((s) => (s.name.length > 40 ? `${s.name.slice(0, 39)}…` : s.name));
  const legendRows = legend ? Math.ceil(names.reduce((w, n) => w + n.length * 5 + 34, 0) / width) : 0;

  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({
      animation: false,
      textStyle: axisText,
      legend: legend ? { show: true, top: 0, left: 0, itemWidth: 14, itemHeight: 9, textStyle: axisText, data: names } : { show: false },
      grid: { left: 8, right: 14, top: 10 + legendRows * 18, bottom: 4, outerBoundsMode: 'same', outerBoundsContain: 'axisLabel' },
      xAxis: {
        type: 'category',
        data: data.buckets.map((b) => bucketAxisLabel(b, granularity)),
        boundaryGap: bars,
        axisLine: { lineStyle: { color: '#374151' } },
        axisTick: { alignWithLabel: true, lineStyle: { color: '#374151' } },
        axisLabel: { ...axisText, hideOverlap: true },
      },
      yAxis: {
        type: 'value',
        min: 0,
        ...(data.unit === 'percent' ? { max: 100, interval: 25 } : {}),
        ...(data.unit === 'count' ? { minInterval: 1 } : {}),
        splitNumber: 4,
        splitLine: { show: true, lineStyle: { color: '#d1d5db' } },
        axisLine: { show: true, lineStyle: { color: '#374151' } },
        axisLabel: {
          ...axisText,
          formatter: (v: number) => (data.unit === 'percent' ? `${v} %` : duration ? `${v} ${duration.suffix}` : formatCount(v)),
        },
      },
      series: data.series.map((s, i) => ({
        name: names[i],
        type: bars ? 'bar' : 'line',
        data: s.values.map((v) => (v === null ? null : scale(v))),
        color: CHART_COLOURS[i % CHART_COLOURS.length],
        barMaxWidth: 14,
        barGap: '10%',
        symbol: SYMBOLS[i % SYMBOLS.length],
        symbolSize: points > 40 ? 4 : 6,
        lineStyle: { width: 1.6, type: LINE_TYPES[i % LINE_TYPES.length] },
      })),
    });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}
