/** Query and response schemas of /v1/analytics/* (units in the descriptions). */
import { AppError } from '../../http/errors';
import { isoDateTime, queryBoolean } from '../../http/validation';
import { z } from '../../http/zod';
import { CHANNELS } from '../workflows/workflow.schemas';
import { GRANULARITIES, PeriodOut } from '../metrics/execution-metrics';
import { WORKFLOW_METRICS } from '../metrics/analytics-metrics';

/** An array query parameter: `a,b`, repeated keys, or both. */
const queryList = (description: string) =>
  z
    .preprocess(
      (v) => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((s) => String(s).split(',')).map((s) => s.trim()).filter(Boolean)),
      z.array(z.string()).optional(),
    )
    .openapi({ description: `${description} Comma-separated (\`a,b\`) or repeated (\`?x=a&x=b\`).`, type: 'array', items: { type: 'string' } });

const period = {
  start_date: isoDateTime.optional().openapi({ description: 'Inclusive start (ISO 8601). Default: 30 days before end_date' }),
  end_date: isoDateTime.optional().openapi({ description: 'Exclusive end; a date-only value includes that whole UTC day. Default: now' }),
};

export const GROUP_BY = ['channel', 'trigger_id'] as const;

export const WorkflowAnalyticsQuery = z.strictObject({
  ...period,
  granularity: z.enum(GRANULARITIES).default('day').openapi({ description: 'Bucket size of daily_metrics: hour, day, week (Monday) or month (UTC)' }),
  metrics: queryList(`Metrics to include in \`metrics\` (default all): ${WORKFLOW_METRICS.join(', ')}.`),
  group_by: queryList('Adds `groups`, one per value of: channel, trigger_id (\'\' = no trigger).'),
});

/** A bad granularity is 422 INVALID_GRANULARITY, as on the workflow metrics. */
export const classifyAnalyticsIssue = ({ path }: { path: PropertyKey[] }) =>
  path[0] === 'granularity' ? { status: 422, code: 'INVALID_GRANULARITY' } : undefined;

/** Unknown metric names get the contract's own code, naming the metric. */
export function checkWorkflowAnalyticsQuery(q: z.output<typeof WorkflowAnalyticsQuery>) {
  for (const m of q.metrics ?? []) {
    if (!(WORKFLOW_METRICS as readonly string[]).includes(m)) {
      throw new AppError(400, 'INVALID_METRICS', `Unknown metric "${m}"; known: ${WORKFLOW_METRICS.join(', ')}`, { field: 'metrics' });
    }
  }
  for (const g of q.group_by ?? []) {
    if (!(GROUP_BY as readonly string[]).includes(g)) {
      throw new AppError(400, 'INVALID_REQUEST', `group_by must be among ${GROUP_BY.join(', ')}`, { field: 'group_by' });
    }
  }
}

export const AnalyticsWorkflowParams = z.strictObject({ workflow_id: z.string().min(1).max(64) });

const TrendOut = z.enum(['increasing', 'stable', 'decreasing']).openapi({ description: 'Versus the previous period of equal length; stable within ±5 %' });

export const AnalyticsMetricsOut = z
  .object({
    total_executions: z.number().int().describe('Executions started in the period'),
    successful_executions: z.number().int(),
    failed_executions: z.number().int(),
    success_rate: z.number().describe('success / (success + failed), 0–1, 4 decimals; 0 when none finished'),
    average_duration_ms: z.number().int().describe('Mean duration of finished executions, milliseconds'),
    total_messages_sent: z.number().int().describe('Outbound messages of these executions created in the period'),
    total_messages_received: z.number().int().describe('Inbound messages linked to these executions created in the period'),
    unique_customers: z.number().int(),
    channel_breakdown: z.record(z.string(), z.number().int()).describe('Executions per channel'),
    customer_satisfaction: z.number().nullable().describe('Mean answer of `rating` form fields (1–5); null without answers'),
    net_promoter_score: z.number().nullable().describe('% promoters (9–10) − % detractors (0–6) of `nps` answers, −100…100; null without answers'),
  })
  .partial()
  .openapi('AnalyticsMetrics', { description: 'Every metric unless `metrics` selects some' });

export const WorkflowAnalyticsOut = z.object({
  workflow_id: z.string(),
  period: PeriodOut,
  metrics: AnalyticsMetricsOut,
  trends: z.object({ execution_trend: TrendOut, success_rate_trend: TrendOut, duration_trend: TrendOut }),
  daily_metrics: z.array(
    z.object({
      date: z.string().describe('Bucket start: YYYY-MM-DD, or YYYY-MM-DDTHH:00:00Z for hour'),
      executions: z.number().int(),
      success_rate: z.number(),
      average_duration_ms: z.number().int().describe('milliseconds'),
      messages_sent: z.number().int().describe('Outbound messages of these executions created in the bucket'),
      messages_received: z.number().int().describe('Inbound messages linked to these executions created in the bucket'),
      unique_customers: z.number().int(),
    }),
  ),
  groups: z
    .array(z.object({ key: z.record(z.string(), z.string()).describe('The group_by values, e.g. {"channel": "whatsapp"}'), metrics: AnalyticsMetricsOut }))
    .optional()
    .describe('Present when group_by is given'),
});

export const PerformanceQuery = z.strictObject({
  ...period,
  include_nodes: queryBoolean.default(true).openapi({ description: 'Include node_performance (default true)' }),
  include_channels: queryBoolean.default(true).openapi({ description: 'Include channel_performance (default true)' }),
});

export const PerformanceOut = z.object({
  workflow_id: z.string(),
  period: PeriodOut,
  performance: z.object({
    execution_time: z
      .object({
        average_ms: z.number().int(),
        median_ms: z.number().int().nullable(),
        p95_ms: z.number().int().nullable(),
        p99_ms: z.number().int().nullable(),
      })
      .describe('Of finished (success or failed) executions, milliseconds; percentiles within 2 % (log-scale histogram), null when none finished'),
    throughput: z.object({
      executions_per_hour: z.number().describe('Executions started per hour, mean over the period'),
      peak_executions_per_hour: z.number().int().describe('Most starts in one UTC clock hour of the period'),
      peak_hour: z.string().nullable().describe('HH:MM (UTC) hour of day with the most starts over the period; null without executions'),
    }),
    error_rate: z.object({
      overall: z.number().describe('failed / finished, 0–1'),
      by_error_type: z
        .object({
          timeout: z.number(),
          api_error: z.number(),
          validation_error: z.number(),
          window_closed: z.number().openapi({ description: "Failed on a closed 24-hour customer service window (customer_service_window_closed); not counted in api_error" }),
        })
        .describe('Each a share of finished executions'),
    }),
    node_performance: z
      .array(
        z.object({
          node_id: z.string(),
          type: z.string(),
          execution_count: z.number().int().describe('Steps recorded for the node'),
          success_rate: z.number(),
          average_duration_ms: z.number().int(),
          error_count: z.number().int(),
        }),
      )
      .optional(),
    channel_performance: z
      .record(z.string(), z.object({ executions: z.number().int(), success_rate: z.number(), average_duration_ms: z.number().int() }))
      .optional(),
  }),
});

export const EngagementQuery = z.strictObject({
  ...period,
  customer_segment: z.string().min(1).max(64).optional().openapi({ description: '`new`, `returning`, or a customer tag' }),
  channel: z.enum(CHANNELS).optional(),
});

export const EngagementOut = z.object({
  period: PeriodOut,
  engagement: z.object({
    total_customers: z.number().int().describe('Customers first seen before the end of the period'),
    active_customers: z.number().int().describe('Customers with an inbound message in the period'),
    new_customers: z.number().int().describe('Active customers whose first inbound message is in the period'),
    returning_customers: z.number().int().describe('Active customers first seen before the period'),
    average_session_duration: z.number().describe('Seconds from the first to the last message of a session (messages ≤ 30 min apart on one channel); a phone call is one session lasting its CallDuration'),
    average_messages_per_session: z.number(),
    customer_satisfaction: z.number().nullable(),
    net_promoter_score: z.number().nullable(),
    handoff_rate: z.number().describe('Share of the active customers handed to a person (a handoff started in the period: POST /v1/customers/{id}/handoff or `fallback: "handoff"`), 0 to 1'),
    engagement_by_channel: z.record(
      z.string(),
      z.object({ customers: z.number().int(), average_session_duration: z.number().describe('seconds'), satisfaction: z.number().nullable() }),
    ),
  }),
  trends: z.object({ customer_growth: TrendOut, engagement_trend: TrendOut, satisfaction_trend: TrendOut }),
});

export const JourneyQuery = z.strictObject({
  ...period,
  journey_type: z.enum(['conversation', 'workflow']).default('conversation'),
  workflow_id: z.string().min(1).max(64).optional().openapi({ description: 'Required with journey_type=workflow' }),
  include_dropoffs: queryBoolean.default(true),
});

export const JourneyOut = z.object({
  period: PeriodOut,
  journey: z.object({
    total_journeys: z.number().int(),
    completed_journeys: z.number().int(),
    completion_rate: z.number(),
    average_journey_duration: z.number().int().describe('Milliseconds from the start of a completed journey to its completion'),
    journey_steps: z.array(
      z.object({
        step: z.number().int(),
        name: z.string(),
        customers: z.number().int().describe('Journeys that entered the step (completed the step before it; every journey enters step 1)'),
        completion_rate: z.number().describe('Journeys that completed the step / journeys that entered it'),
        average_duration_ms: z.number().int().describe('Of the journeys that completed the step'),
      }),
    ),
    drop_off_points: z
      .array(
        z.object({
          step: z.number().int(),
          name: z.string(),
          drop_off_count: z.number().int().describe('Journeys that entered the step and did not complete it'),
          drop_off_rate: z.number().describe('drop_off_count / journeys that entered the step'),
          common_reasons: z.array(z.string()).describe('Why those journeys stopped, most frequent first (at most 3)'),
        }),
      )
      .optional(),
  }),
});

export const RealtimeQuery = z.strictObject({
  workflow_id: z.string().min(1).max(64).optional(),
  channel: z.enum(CHANNELS).optional(),
  include_system: queryBoolean.default(false).openapi({ description: 'Adds system_metrics; needs the admin scope' }),
});

export const RealtimeOut = z.object({
  timestamp: z.string(),
  current_metrics: z.object({
    active_workflows: z.number().int(),
    active_executions: z.number().int().describe('Executions running now'),
    messages_in_last_hour: z.number().int(),
    average_response_time_ms: z.number().int().describe('Inbound message → first outbound reply to that customer, last hour, milliseconds; 0 when none'),
    system_health: z.enum(['healthy', 'degraded', 'unhealthy']).describe('From the readiness checks (cached 5 s)'),
  }),
  workflow_metrics: z.array(
    z.object({
      workflow_id: z.string(),
      name: z.string(),
      active_executions: z.number().int(),
      messages_in_last_hour: z.number().int(),
      average_response_time_ms: z.number().int(),
    }),
  ),
  channel_metrics: z.record(z.string(), z.object({ active_conversations: z.number().int(), messages_in_last_hour: z.number().int() })),
  system_metrics: z
    .object({
      cpu_usage: z.number().describe('This process: share of one core used since the previous sample, 0–1+'),
      memory_usage: z.number().describe('This process: resident set size / total memory, 0–1'),
      api_response_time_ms: z.number().describe('Mean HTTP response time of this process since it started, milliseconds'),
    })
    .optional(),
});
