/**
 * Data exports: the record the API serves while a Temporal workflow (`export:<id>`) writes
 * the file to file storage. `request` keeps the validated creation body, so the workflow and
 * the status answer read the same filters.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import { FileColumns, FileColumnsSchema, type FileRecord, type OptionalFileColumns } from '../files/file-record.entity';

export const EXPORT_STATUSES = ['processing', 'completed', 'failed', 'expired'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

export class AnalyticsExport extends FileColumns implements FileRecord {
  [OptionalProps]?: 'rowsTotal' | 'rowsWritten' | 'generatedAt' | OptionalFileColumns;
  id!: string;
  organizationId!: string;
  dataType!: string;
  format!: 'csv' | 'json' | 'xlsx';
  request!: Record<string, unknown>;
  includeMetadata!: boolean;
  status!: ExportStatus;
  rowsTotal: number | null = null;
  rowsWritten = 0;
  /** When the export read its data: the metadata's `generated_at` (null before completion and for older exports). */
  generatedAt: Date | null = null;
}

export const AnalyticsExportSchema = new EntitySchema<AnalyticsExport, FileColumns>({
  class: AnalyticsExport,
  extends: FileColumnsSchema,
  tableName: 'exports',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    dataType: { type: 'string', fieldName: 'data_type' },
    format: { type: 'string' },
    request: { type: 'json' },
    includeMetadata: { type: 'boolean', fieldName: 'include_metadata' },
    status: { type: 'string' },
    rowsTotal: { type: 'integer', fieldName: 'rows_total', nullable: true },
    rowsWritten: { type: 'integer', fieldName: 'rows_written' },
    generatedAt: { type: 'Date', fieldName: 'generated_at', nullable: true },
  },
});
