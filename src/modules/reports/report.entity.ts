/**
 * Data exports and custom reports: the record the API serves while a Temporal workflow
 * (`export:<id>`, `report:<id>`) writes the file to file storage. `request` keeps the
 * validated creation body, so the workflow and the status answer read the same filters.
 */
import { BigIntType, EntitySchema, OptionalProps } from '@mikro-orm/core';

export const EXPORT_STATUSES = ['processing', 'completed', 'failed', 'expired'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];
export const REPORT_STATUSES = ['generating', 'completed', 'failed', 'expired'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

interface FileRecord {
  fileKey: string | null;
  fileSize: number | null;
  errorMessage: string | null;
  createdAt: Date;
  completedAt: Date | null;
  expiresAt: Date | null;
}

export class AnalyticsExport implements FileRecord {
  [OptionalProps]?: 'rowsTotal' | 'rowsWritten' | 'fileKey' | 'fileSize' | 'errorMessage' | 'createdAt' | 'completedAt' | 'expiresAt' | 'generatedAt';
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
  fileKey: string | null = null;
  fileSize: number | null = null;
  errorMessage: string | null = null;
  createdAt: Date = new Date();
  completedAt: Date | null = null;
  expiresAt: Date | null = null;
}

const fileColumns = {
  fileKey: { type: 'string', fieldName: 'file_key', nullable: true },
  fileSize: { type: new BigIntType('number'), fieldName: 'file_size', nullable: true },
  errorMessage: { type: 'string', fieldName: 'error_message', nullable: true },
  createdAt: { type: 'Date', fieldName: 'created_at' },
  completedAt: { type: 'Date', fieldName: 'completed_at', nullable: true },
  expiresAt: { type: 'Date', fieldName: 'expires_at', nullable: true },
} as const;

export const AnalyticsExportSchema = new EntitySchema<AnalyticsExport>({
  class: AnalyticsExport,
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
    ...fileColumns,
  },
});

export class Report implements FileRecord {
  [OptionalProps]?: 'description' | 'fileKey' | 'fileSize' | 'errorMessage' | 'createdAt' | 'completedAt' | 'expiresAt';
  id!: string;
  organizationId!: string;
  name!: string;
  description: string | null = null;
  format!: 'csv' | 'json' | 'pdf';
  request!: Record<string, unknown>;
  status!: ReportStatus;
  fileKey: string | null = null;
  fileSize: number | null = null;
  errorMessage: string | null = null;
  createdAt: Date = new Date();
  completedAt: Date | null = null;
  expiresAt: Date | null = null;
}

export const ReportSchema = new EntitySchema<Report>({
  class: Report,
  tableName: 'reports',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    description: { type: 'string', nullable: true },
    format: { type: 'string' },
    request: { type: 'json' },
    status: { type: 'string' },
    ...fileColumns,
  },
});
