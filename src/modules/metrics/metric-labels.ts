/**
 * Owns how people read the workflow analytics metrics (analytics-metrics.ts defines them):
 * one label per metric and the value with its unit, e.g. "Success rate" "98.5 %",
 * "Customer satisfaction" "2.92 / 5 (12 answers)", "Net Promoter Score" "+25 (8 answers)",
 * "Average duration" "1.4 s". PDF reports print these; API answers and CSV headers keep the
 * metric names (clients under /v1 read those columns by name).
 */
import type { WorkflowMetric, WorkflowMetricsValues } from './analytics-metrics';

/** How many form answers a figure was computed from (customer satisfaction, NPS). */
export interface AnswerCounts {
  ratings: number;
  nps: number;
}

export const METRIC_LABELS: Record<WorkflowMetric, string> = {
  total_executions: 'Executions',
  successful_executions: 'Successful executions',
  failed_executions: 'Failed executions',
  success_rate: 'Success rate',
  average_duration_ms: 'Average duration',
  total_messages_sent: 'Messages sent',
  total_messages_received: 'Messages received',
  unique_customers: 'Unique customers',
  channel_breakdown: 'Executions by channel',
  customer_satisfaction: 'Customer satisfaction',
  net_promoter_score: 'Net Promoter Score',
};

const count = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });
const twoDecimals = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

export const formatCount = (n: number) => count.format(n);

/** A ratio 0–1 as a percentage: 1 → "100 %", 0.9876 → "98.8 %". */
export const formatPercent = (ratio: number) => `${oneDecimal.format(ratio * 100)} %`;

/** A duration in the unit that reads best: under a minute in s, under two hours in min, else h. */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${twoDecimals.format(ms / 1000)} s`;
  if (ms < 7_200_000) return `${oneDecimal.format(ms / 60_000)} min`;
  return `${oneDecimal.format(ms / 3_600_000)} h`;
}

const answers = (n: number) => `${formatCount(n)} ${n === 1 ? 'answer' : 'answers'}`;

/** A metric's value as a reader expects it, with its unit; a figure without answers reads "no answers". */
export function formatMetric<M extends WorkflowMetric>(metric: M, value: WorkflowMetricsValues[M] | undefined, counts?: AnswerCounts): string {
  if (value === undefined) return '–';
  switch (metric) {
    case 'success_rate':
      return formatPercent(value as number);
    case 'average_duration_ms':
      return formatDuration(value as number);
    case 'customer_satisfaction':
      return value === null ? 'no answers' : `${twoDecimals.format(value as number)} / 5${counts ? ` (${answers(counts.ratings)})` : ''}`;
    case 'net_promoter_score': {
      if (value === null) return 'no answers';
      const nps = value as number;
      // An ASCII minus: the PDF's standard fonts have no U+2212.
      return `${nps > 0 ? '+' : nps < 0 ? '-' : ''}${oneDecimal.format(Math.abs(nps))}${counts ? ` (${answers(counts.nps)})` : ''}`;
    }
    case 'channel_breakdown': {
      const entries = Object.entries(value as Record<string, number>);
      return entries.length ? entries.map(([channel, n]) => `${channel} ${formatCount(n)}`).join(', ') : 'none';
    }
    default:
      return formatCount(value as number);
  }
}
