/** The In / Out shapes of dry runs. */
import { Timestamp } from '../../http/openapi';
import { paginationQuery } from '../../http/pagination';
import { isoDateTime } from '../../http/validation';
import { z } from '../../http/zod';
import { EXECUTION_STATUSES } from '../executions/execution.entity';
import { WorkflowConfiguration, WorkflowIdParams } from '../workflows/workflow.schemas';
import { TemporalUiUrlOut } from '../../temporal-ui';

export const MAX_DRY_RUN_EXECUTIONS = 100;
export const DRY_RUN_STATUSES = ['pending', 'running', 'completed', 'failed'] as const;
export const DRY_RUN_ITEM_STATUSES = ['pending', 'success', 'failed', 'waiting_for_input'] as const;

const Id = z.string().min(1).max(64);

export const DryRunFilter = z
  .strictObject({
    status: z.enum(EXECUTION_STATUSES).optional(),
    trigger_id: Id.optional(),
    start_date: isoDateTime.optional().openapi({ description: 'Executions started at or after (ISO 8601)' }),
    end_date: isoDateTime.optional().openapi({ description: 'Executions started before; a date-only value includes its whole day (UTC)' }),
  })
  .openapi('DryRunFilter', { description: `The workflow's executions that match, newest first, at most ${MAX_DRY_RUN_EXECUTIONS}` });
export type DryRunFilter = z.output<typeof DryRunFilter>;

export const DryRunRevision = z
  .union([z.literal('draft'), z.number().int().min(1)])
  .openapi({ description: '`draft`: the body\'s `configuration`, else the workflow\'s latest; a number: that saved revision' });

export const DryRunIn = z
  .strictObject({
    execution_ids: z.array(Id).min(1).max(MAX_DRY_RUN_EXECUTIONS).optional().openapi({ description: "Executions of this workflow (give these or `filter`)" }),
    filter: DryRunFilter.optional(),
    revision: DryRunRevision.default('draft'),
    configuration: WorkflowConfiguration.optional().openapi({ description: 'An unsaved draft to run (only with revision `draft`); validated as on workflow update' }),
  })
  .openapi('DryRunCreate');
export type DryRunIn = z.output<typeof DryRunIn>;

export const DryRunParams = WorkflowIdParams.extend({ dry_run_id: z.string().max(64) });
export const DryRunListQuery = z.strictObject({ ...paginationQuery, status: z.enum(DRY_RUN_STATUSES).optional() });

const ErrorOut = z.object({ type: z.string().nullable(), message: z.string().nullable() });

const StepViewOut = z.object({
  type: z.string(),
  status: z.string(),
  input: z.record(z.string(), z.unknown()),
  output: z.record(z.string(), z.unknown()),
  error: ErrorOut.nullable(),
});

const NodeVisitOut = z
  .object({
    node_id: z.string(),
    step: StepViewOut.nullable().openapi({ description: 'Null for a node reached but not finished (a form still waiting)' }),
    messages: z.array(z.string()).openapi({ description: 'What this node sent the customer, in order' }),
  })
  .openapi('DryRunNodeVisit');

export const RunDiffOut = z
  .object({
    identical: z.boolean(),
    first_divergence: z
      .object({ index: z.number().int(), node_id: z.string(), changes: z.array(z.string()) })
      .nullable()
      .openapi({ description: 'The first node visit that differs' }),
    nodes: z.array(
      z.object({
        index: z.number().int(),
        original: NodeVisitOut.nullable(),
        dry_run: NodeVisitOut.nullable(),
        changes: z
          .array(z.string())
          .openapi({ description: '`node_id`, `visit` (one side never got there), `step` (one side has none), `step.<path>` (e.g. `step.output.form_data.email`), `messages`' }),
      }),
    ),
  })
  .openapi('DryRunDiff');

export const DryRunItemOut = z
  .object({
    execution_id: z.string(),
    status: z.enum(DRY_RUN_ITEM_STATUSES).openapi({ description: '`waiting_for_input`: the recorded replies ran out at a form' }),
    output: z.record(z.string(), z.unknown()).nullable(),
    error: ErrorOut.nullable(),
    original: z.object({ status: z.enum(EXECUTION_STATUSES), revision: z.number().int(), output: z.record(z.string(), z.unknown()).nullable(), error: ErrorOut.nullable() }),
    replies: z.array(z.object({ message_id: z.string(), text: z.string() })).openapi({ description: "The customer's recorded replies, fed to the dry run in this order" }),
    diff: RunDiffOut.nullable().openapi({ description: 'Null until the item is done' }),
  })
  .openapi('DryRunItem');

export const DryRunOut = z
  .object({
    id: z.string().openapi({ example: 'dry_4eC39HqLyjWDarjtT1zd' }),
    temporal_ui_url: TemporalUiUrlOut,
    workflow_id: z.string(),
    status: z.enum(DRY_RUN_STATUSES),
    revision: DryRunRevision,
    executions: z.number().int().openapi({ description: 'Executions replayed' }),
    completed: z.number().int().openapi({ description: 'Executions whose replay is done' }),
    diverged: z.number().int().openapi({ description: 'Done executions whose dry run differs from the recording' }),
    error: z.string().nullable(),
    created_at: Timestamp,
    started_at: Timestamp.nullable(),
    completed_at: Timestamp.nullable(),
  })
  .openapi('DryRun');

export const DryRunDetailOut = DryRunOut.extend({
  configuration: WorkflowConfiguration.openapi({ description: 'The configuration the dry run ran' }),
  items: z.array(DryRunItemOut),
}).openapi('DryRunDetail');
