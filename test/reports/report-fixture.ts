/**
 * A report as the user made it, without a database: two survey workflows, 12
 * conversations each in November 2026, ratings 1–5, asked for total_executions,
 * success_rate and customer_satisfaction grouped by workflow at hourly granularity. The PDF
 * tests render it, and scripts/render-report-example.ts renders docs/report-example.png from it.
 */
import { bucketLabel, bucketStarts } from '../../src/modules/metrics/analytics-metrics';
import type { Granularity } from '../../src/modules/metrics/execution-metrics';
import type { ReportData, ReportGroup, ReportSeries, StoredReportRequest } from '../../src/modules/reports/report.data';
import type { ReportPdfInput } from '../../src/modules/reports/report.pdf';

const PERIOD = { start: new Date('2026-11-01T00:00:00Z'), end: new Date('2026-12-01T00:00:00Z') };

/** Conversations as [day of November, hour, succeeded]. */
type Conversation = [day: number, hour: number, ok: boolean];

function seriesOf(conversations: Conversation[], granularity: Granularity): ReportSeries {
  return bucketStarts(PERIOD, granularity).map((start) => {
    const label = bucketLabel(start, granularity);
    const next = bucketStarts({ start, end: PERIOD.end }, granularity)[1] ?? PERIOD.end;
    const inside = conversations.filter(([d, h]) => {
      const at = Date.UTC(2026, 10, d, h);
      return at >= start.getTime() && at < next.getTime();
    });
    const ok = inside.filter((c) => c[2]).length;
    return {
      date: label,
      executions: inside.length,
      success_rate: inside.length ? Math.round((ok / inside.length) * 10_000) / 10_000 : 0,
      average_duration_ms: inside.length ? 95_000 : 0,
      messages_sent: inside.length * 4,
      messages_received: inside.length * 3,
      unique_customers: inside.length,
    };
  });
}

function group(id: string, name: string, conversations: Conversation[], satisfaction: number, granularity: Granularity, chartGranularity: Granularity): ReportGroup {
  const ok = conversations.filter((c) => c[2]).length;
  return {
    workflow_id: id,
    workflow_name: name,
    metrics: { total_executions: conversations.length, success_rate: Math.round((ok / conversations.length) * 10_000) / 10_000, customer_satisfaction: satisfaction },
    series: seriesOf(conversations, granularity),
    answers: { ratings: conversations.length, nps: 0 },
    chartSeries: seriesOf(conversations, chartGranularity),
  };
}

const DELIVERY: Conversation[] = [
  [2, 9, true], [3, 14, true], [5, 10, true], [8, 16, true], [9, 11, true], [12, 15, true],
  [15, 9, true], [17, 13, true], [20, 10, true], [23, 17, true], [26, 12, true], [29, 9, true],
];
const STORE: Conversation[] = [
  [1, 12, true], [4, 10, true], [4, 18, false], [7, 11, true], [10, 9, true], [14, 16, true],
  [14, 17, true], [18, 10, true], [21, 14, false], [24, 11, true], [27, 15, true], [30, 10, true],
];

export function fixtureReport(granularity: Granularity = 'hour', chartGranularity: Granularity = 'day'): ReportPdfInput {
  const request: StoredReportRequest = {
    metrics: ['total_executions', 'success_rate', 'customer_satisfaction'],
    filters: { start_date: '2026-11-01', end_date: '2026-11-30' },
    group_by: ['workflow_id'],
    granularity,
  };
  const data: ReportData = {
    period: { start_date: PERIOD.start.toISOString(), end_date: PERIOD.end.toISOString() },
    granularity,
    chartGranularity,
    groups: [
      group('wf_delivery_survey', 'Delivery survey', DELIVERY, 2.92, granularity, chartGranularity),
      group('wf_store_survey', 'Store survey', STORE, 4.25, granularity, chartGranularity),
    ],
    workflowNames: { wf_delivery_survey: 'Delivery survey', wf_store_survey: 'Store survey' },
  };
  return {
    name: 'November surveys',
    description: 'Post-conversation surveys of the delivery and store teams.',
    organizationName: 'Acme Retail',
    request,
    data,
    generatedAt: new Date('2026-12-01T08:15:00Z'),
  };
}
