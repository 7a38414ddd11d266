/** The In / Out shapes of executions. */
import { paginationQuery } from '../../http/pagination';
import { isoDateTime } from '../../http/validation';
import { Timestamp } from '../../http/openapi';
import { z } from '../../http/zod';
import { DailyMetricOut, GRANULARITIES, MetricsCountersOut, metricsQueryFields, PeriodOut } from '../metrics/execution-metrics';
import { AiResponseNode, FormNode, MessageNode } from '../workflows/workflow.schemas';
import { ERROR_TYPES, EXECUTION_STATUSES } from './execution.entity';
import { TemporalUiUrlOut } from '../../temporal-ui';

const JsonObject = z.record(z.string(), z.unknown());

/** What an execution answered so far; written by the execution workflow (temporal/workflows/execution.workflow.ts). */
export const ExecutionOutputOut = z
  .object({
    response: z.string().nullable().openapi({ description: 'The last text sent to the customer' }),
    next_action: z.enum(['wait_for_input', 'end', 'cancelled', 'handed_off']).openapi({
      description: '`handed_off`: the customer was handed to a person (status `cancelled`): a handoff closed its form, or an ai_response node with `fallback: "handoff"` (docs/handoff.md)',
    }),
    closed_reason: z.literal('handed_off').optional().openapi({ description: 'Its waiting form was closed by a handoff' }),
    form_data: z
      .record(z.string(), z.record(z.string(), z.string()))
      .optional()
      .openapi({ description: 'Form answers by form node id, then field name', example: { ask: { email: 'ada@example.com' } } }),
    node_id: z.string().optional().openapi({ description: 'While waiting: the form node' }),
    field: z.string().optional().openapi({ description: 'While waiting: the field asked for' }),
  })
  .openapi('ExecutionOutput');

export const ExecutionOut = z
  .object({
    id: z.string().openapi({ example: 'exec_4eC39HqLyjWDarjtT1zd' }),
    temporal_ui_url: TemporalUiUrlOut,
    workflow_id: z.string(),
    status: z.enum(EXECUTION_STATUSES),
    started_at: Timestamp,
    completed_at: Timestamp.nullable(),
    duration_ms: z.number().int().nullable(),
    customer_id: z.string().nullable(),
    channel: z.string(),
    input: JsonObject,
    output: ExecutionOutputOut.nullable(),
    trigger_id: z.string().nullable(),
    retry_of: z.string().nullable(),
    reset_from_run_id: z
      .string()
      .optional()
      .openapi({ description: 'Present when an operator reset the execution in Temporal: the run it was reset from; the execution follows the new run' }),
    queued_at: Timestamp.optional().openapi({
      description:
        'Present when the execution waited for the customer\'s running execution of the workflow (`on_conflict: "queue"`): when it arrived. While `status` is `queued`, `started_at` is that time too; once it left the queue, `started_at` is when it started',
    }),
    revision: z.number().int(),
    error: z.object({ type: z.enum(ERROR_TYPES).nullable(), message: z.string().nullable() }).nullable(),
  })
  .openapi('Execution');

/** A step's output by node type (empty for a failed step). */
const StepOutputOut = z
  .object({
    message_sent: z.string().optional().openapi({ description: 'message nodes' }),
    response: z.string().optional().openapi({ description: 'ai_response nodes' }),
    confidence: z.number().min(0).max(1).optional().openapi({ description: 'ai_response nodes' }),
    fallback_used: z.boolean().optional().openapi({ description: 'ai_response nodes' }),
    handed_off: z.boolean().optional().openapi({ description: 'ai_response nodes with `fallback: "handoff"`: the customer was handed to a person instead of answered' }),
    article_ids: z.array(z.string()).optional().openapi({ description: 'ai_response nodes' }),
    model_used: z.boolean().optional().openapi({ description: 'ai_response nodes' }),
    form_data: z.record(z.string(), z.string()).optional().openapi({ description: 'form nodes: answers by field name' }),
  })
  .openapi('ExecutionStepOutput');

export const StepOut = z
  .object({
    node_id: z.string(),
    type: z.enum([MessageNode.shape.type.value, AiResponseNode.shape.type.value, FormNode.shape.type.value]),
    status: z.enum(['completed', 'failed']),
    started_at: Timestamp,
    completed_at: Timestamp.nullable(),
    duration_ms: z.number().int().nullable(),
    input: JsonObject,
    output: StepOutputOut,
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

/** end_date before start_date → 400 INVALID_DATE_RANGE; a bad granularity → 422 INVALID_GRANULARITY. */
export const classifyExecutionQueryIssue = ({ path, issue }: { path: PropertyKey[]; issue: { code: string } }) => {
  if (path[0] === 'end_date' && issue.code === 'custom') return { status: 400, code: 'INVALID_DATE_RANGE' };
  if (path[0] === 'granularity') return { status: 422, code: 'INVALID_GRANULARITY' };
  return undefined;
};
