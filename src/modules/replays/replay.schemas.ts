/** The In / Out shapes of bulk replays. */
import { paginationQuery } from '../../http/pagination';
import { isoDateTime } from '../../http/validation';
import { z } from '../../http/zod';
import { ERROR_TYPES } from '../executions/execution.entity';
import { TemporalUiUrlOut } from '../../temporal-ui';

export const MAX_REPLAY_EXECUTION_IDS = 10_000;
export const REPLAY_STATUSES = ['running', 'completed', 'cancelled'] as const;

const Id = z.string().min(1).max(64);

const filterCriteria = {
    workflow_id: Id.optional(),
    trigger_id: Id.optional(),
    status: z.enum(['failed', 'cancelled']).optional().openapi({ description: 'Default: both failed and cancelled (unless execution_ids are given)' }),
    error_type: z.enum(ERROR_TYPES).optional(),
    start_date: isoDateTime.optional().openapi({ description: 'Executions started at or after (ISO 8601)' }),
    end_date: isoDateTime.optional().openapi({ description: 'Executions started before; a date-only value includes its whole day (UTC)' }),
    execution_ids: z
      .array(Id)
      .min(1)
      .max(MAX_REPLAY_EXECUTION_IDS)
      .optional()
      .openapi({ description: `At most ${MAX_REPLAY_EXECUTION_IDS}; ids whose execution is not failed or cancelled are counted as skipped` }),
};

export const ReplayFilter = z
  .strictObject(filterCriteria)
  .refine((f) => Object.values(f).some((v) => v !== undefined), { message: 'filter must name at least one criterion' })
  .openapi('ReplayFilter');
export type ReplayFilter = z.output<typeof ReplayFilter>;

export const ReplayIn = z
  .strictObject({
    filter: ReplayFilter,
    rate_per_second: z.number().int().min(1).max(100).default(5).openapi({ description: 'Retries started per second, at most' }),
    revision: z.literal('current').default('current').openapi({ description: "Retries run on the workflow's current revision" }),
  })
  .openapi('ReplayCreate');

export const ReplayParams = z.object({ replay_id: z.string().max(64) });
export const ReplayListQuery = z.strictObject({ ...paginationQuery, status: z.enum(REPLAY_STATUSES).optional() });

export const ReplayOut = z
  .object({
    id: z.string().openapi({ example: 'rpl_4eC39HqLyjWDarjtT1zd' }),
    temporal_ui_url: TemporalUiUrlOut,
    status: z.enum(REPLAY_STATUSES),
    filter: z.object(filterCriteria).omit({ execution_ids: true }).extend({
      execution_ids_count: z.number().int().optional().openapi({ description: 'How many execution_ids the filter named' }),
    }),
    rate_per_second: z.number().int(),
    revision: z.string(),
    matched: z.number().int().openapi({ description: 'Executions the filter matched when the replay was created' }),
    started: z.number().int().openapi({ description: 'Retries started' }),
    skipped: z.number().int().openapi({ description: 'Matched executions that were not failed or cancelled' }),
    failed: z.number().int().openapi({ description: 'Retries refused (reasons in `failures` of the detail)' }),
    created_at: z.string(),
    completed_at: z.string().nullable(),
  })
  .openapi('Replay');

export const ReplayDetailOut = ReplayOut.extend({
  failures: z
    .array(z.object({ execution_id: z.string(), code: z.string(), message: z.string() }))
    .openapi({ description: 'The first 100 refused retries, by execution id' }),
}).openapi('ReplayDetail');
