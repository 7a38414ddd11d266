/** The In / Out shapes of executions, inbound messages, customers and the transcript. */
import { paginationQuery } from '../../http/pagination';
import { isoDateTime } from '../../http/validation';
import { z } from '../../http/zod';
import { DailyMetricOut, GRANULARITIES, MetricsCountersOut, metricsQueryFields, PeriodOut } from '../metrics/execution-metrics';
import { Channel } from '../workflows/workflow.schemas';
import { ERROR_TYPES, EXECUTION_STATUSES } from './execution.entity';

const JsonObject = z.record(z.string(), z.unknown());
const boundedMetadata = JsonObject.refine((v) => JSON.stringify(v).length <= 16_384, 'metadata must be at most 16 KiB of JSON');

export const MessageIn = z
  .strictObject({
    channel: Channel,
    customer_id: z
      .string()
      .trim()
      .min(1, 'customer_id must not be empty')
      .max(128)
      .openapi({ description: "The customer's identifier on the channel (phone number, handle)", example: '+14155550100' }),
    message: z.string().min(1, 'message must not be empty').max(4096),
    metadata: boundedMetadata
      .optional()
      .openapi({ description: 'Free-form; `language` (a language code) is matched against message triggers' }),
    customer: z.strictObject({ name: z.string().trim().min(1).max(200).optional() }).optional(),
  })
  .openapi('InboundMessage');

export const InboundResultOut = z
  .object({
    message_id: z.string(),
    customer_id: z.string(),
    status: z.enum(['resumed', 'started', 'no_match']),
    executions: z.array(
      z.object({ id: z.string(), workflow_id: z.string(), trigger_id: z.string().nullable(), action: z.enum(['started', 'resumed']) }),
    ),
  })
  .openapi('InboundMessageResult');

export const ExecutionOut = z
  .object({
    id: z.string().openapi({ example: 'exec_4eC39HqLyjWDarjtT1zd' }),
    workflow_id: z.string(),
    status: z.enum(EXECUTION_STATUSES),
    started_at: z.string(),
    completed_at: z.string().nullable(),
    duration_ms: z.number().int().nullable(),
    customer_id: z.string().nullable(),
    channel: z.string(),
    input: JsonObject,
    output: JsonObject.nullable(),
    trigger_id: z.string().nullable(),
    retry_of: z.string().nullable(),
    revision: z.number().int(),
    error: z.object({ type: z.enum(ERROR_TYPES).nullable(), message: z.string().nullable() }).nullable(),
  })
  .openapi('Execution');

export const StepOut = z
  .object({
    node_id: z.string(),
    type: z.string(),
    status: z.enum(['completed', 'failed']),
    started_at: z.string(),
    completed_at: z.string().nullable(),
    duration_ms: z.number().int().nullable(),
    input: JsonObject,
    output: JsonObject,
    error: z.object({ type: z.string().nullable(), message: z.string().nullable() }).nullable(),
  })
  .openapi('ExecutionStep');

export const ExecutionDetailOut = ExecutionOut.extend({ steps: z.array(StepOut) }).openapi('ExecutionDetail');

export const ExecutionListQuery = z
  .strictObject({
    ...paginationQuery,
    status: z.enum(EXECUTION_STATUSES).optional(),
    start_date: isoDateTime.optional().openapi({ description: 'Executions started at or after (ISO 8601)' }),
    end_date: isoDateTime.optional().openapi({ description: 'Executions started before this time; a date-only value includes its whole day (UTC)' }),
  });

export const MetricsQuery = z.strictObject(metricsQueryFields);

export const MetricsOut = z
  .object({
    workflow_id: z.string(),
    period: PeriodOut,
    granularity: z.enum(GRANULARITIES),
    metrics: MetricsCountersOut.extend({ total_messages_sent: z.number().int(), total_messages_received: z.number().int() }),
    daily_metrics: z.array(DailyMetricOut),
  })
  .openapi('WorkflowMetrics');

export const ExecutionParams = z.object({ workflow_id: z.string().max(64), execution_id: z.string().max(64) });

export const CustomerOut = z
  .object({
    id: z.string().openapi({ example: 'cus_4eC39HqLyjWDarjtT1zd' }),
    channel: z.string(),
    external_id: z.string(),
    name: z.string().nullable(),
    message_count: z.number().int(),
    first_seen_at: z.string(),
    last_message_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('Customer');

export const TranscriptMessageOut = z
  .object({
    id: z.string(),
    customer_id: z.string(),
    channel: z.string(),
    direction: z.enum(['inbound', 'outbound']),
    text: z.string(),
    metadata: JsonObject,
    execution_id: z.string().nullable(),
    node_id: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi('TranscriptMessage');

export const CustomerListQuery = z.strictObject({
  ...paginationQuery,
  channel: Channel.optional(),
  external_id: z.string().min(1).max(128).optional(),
});
export const CustomerParams = z.object({ customer_id: z.string().max(64) });
export const TranscriptQuery = z.strictObject({ ...paginationQuery });

/** end_date before start_date → 400 INVALID_DATE_RANGE; a bad granularity → 422 INVALID_GRANULARITY. */
export const classifyExecutionQueryIssue = ({ path, issue }: { path: PropertyKey[]; issue: { code: string } }) => {
  if (path[0] === 'end_date' && issue.code === 'custom') return { status: 400, code: 'INVALID_DATE_RANGE' };
  if (path[0] === 'granularity') return { status: 422, code: 'INVALID_GRANULARITY' };
  return undefined;
};
