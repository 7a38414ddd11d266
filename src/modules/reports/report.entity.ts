/**
 * Custom reports: the record the API serves while a Temporal workflow (`report:<id>`)
 * writes the file to file storage. `request` keeps the validated creation body (metrics,
 * filters, grouping, granularity), which the workflow reads.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import { FileColumns, FileColumnsSchema, type FileRecord, type OptionalFileColumns } from '../files/file-record.entity';

export const REPORT_STATUSES = ['generating', 'completed', 'failed', 'expired'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

export class Report extends FileColumns implements FileRecord {
  [OptionalProps]?: 'description' | OptionalFileColumns;
  id!: string;
  organizationId!: string;
  name!: string;
  description: string | null = null;
  format!: 'csv' | 'json' | 'pdf';
  request!: Record<string, unknown>;
  status!: ReportStatus;
}

export const ReportSchema = new EntitySchema<Report, FileColumns>({
  class: Report,
  extends: FileColumnsSchema,
  tableName: 'reports',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    description: { type: 'string', nullable: true },
    format: { type: 'string' },
    request: { type: 'json' },
    status: { type: 'string' },
  },
});
