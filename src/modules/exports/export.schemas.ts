/** The In / Out shapes of data exports. */
import { isoDateTime } from '../../http/validation';
import { z } from '../../http/zod';
import { TemporalUiUrlOut } from '../../temporal-ui';
import { ChannelsFilter, ErrorDetail, WorkflowIdsFilter } from '../files/file-records.schemas';
import { EXPORT_DATA_TYPES } from './export.sources';

export const ExportIn = z
  .strictObject({
    data_type: z.enum(EXPORT_DATA_TYPES),
    format: z.enum(['csv', 'json', 'xlsx']).default('csv').openapi({ description: '`json` is NDJSON: one object per line' }),
    start_date: isoDateTime.optional().openapi({ description: 'Inclusive; on the data type\'s own time column' }),
    end_date: isoDateTime.optional().openapi({ description: 'Exclusive timestamp, or a date whose whole day is included' }),
    filters: z.strictObject({ workflow_ids: WorkflowIdsFilter.optional(), channels: ChannelsFilter.optional() }).default({}),
    include_metadata: z
      .boolean()
      .default(false)
      .openapi({
        description:
          'json (NDJSON): a first line `{"type":"metadata", export_id, data_type, format, filters, generated_at, row_count}`; xlsx: a second sheet `metadata`; csv: no extra lines. All formats: `metadata` in the status record',
      }),
  })
  .openapi('ExportRequest');

export const ExportParams = z.strictObject({ export_id: z.string().max(64) });

export const ExportOut = z
  .object({
    export_id: z.string(),
    temporal_ui_url: TemporalUiUrlOut,
    data_type: z.enum(EXPORT_DATA_TYPES),
    format: z.enum(['csv', 'json', 'xlsx']),
    status: z.enum(['processing', 'completed', 'failed', 'expired']),
    created_at: z.string(),
    estimated_completion: z.string().nullable().openapi({ description: 'While processing' }),
    completed_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    download_url: z.string(),
    progress: z.object({ rows_written: z.number().int(), rows_total: z.number().int().nullable(), percent: z.number().int() }),
    file_size: z.number().int().nullable(),
    error: ErrorDetail.nullable().openapi({ description: '`EXPORT_GENERATION_FAILED` when failed' }),
    metadata: z
      .object({ export_id: z.string(), data_type: z.string(), format: z.string(), filters: z.record(z.string(), z.unknown()), generated_at: z.string(), row_count: z.number().int() })
      .optional()
      .openapi({ description: 'With include_metadata, once completed' }),
  })
  .openapi('Export');

