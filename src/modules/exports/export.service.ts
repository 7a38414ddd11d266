/**
 * Owns data exports as organization-scoped records: creation (validate, record, then start
 * the Temporal workflow; one whose start fails is started by the worker's reconciler,
 * src/modules/starts/durable-start.ts), reads and lists, downloads (a `FileHandle` the route
 * streams or redirects to), and the state changes the export workflow makes (total,
 * progress, completed, failed), each completion or failure committed with its `export.*` event.
 */
import type { HeldClaim } from '../../http/idempotency';
import type { z } from '../../http/zod';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { temporalUiLink } from '../../temporal-ui';
import { exportWorkflowId } from '../../../temporal/reports.shared';
import { estimatedCompletion, type FileHandle, type FileJobService, type FileNaming, FileRecords } from '../files/file-records';
import type { Page } from '../../http/pagination';
import { dispatchStart as dispatchJob } from '../starts/durable-start';
import { JOBS } from '../starts/job-starts';
import { dateFilter } from '../metrics/execution-metrics';
import { AnalyticsExport } from './export.entity';
import type { ExportIn, ExportOut } from './export.schemas';
import { checkFiltersApply, type ExportDataType, type ExportFilters } from './export.sources';
import { EXPORT_CONTENT_TYPES, type ExportJob, type ExportMetadata } from './export.writer';

const EXTENSIONS = { csv: 'csv', json: 'ndjson', xlsx: 'xlsx' } as const;

type ExportRequest = z.output<typeof ExportIn>;

export class ExportService implements FileJobService<ExportRequest, z.output<typeof ExportOut>> {
  private readonly records: FileRecords<AnalyticsExport>;

  constructor(private readonly services: Services) {
    this.records = new FileRecords(services, AnalyticsExport, 'export', 'processing');
  }

  async create(organizationId: string, body: ExportRequest, claim?: HeldClaim): Promise<z.output<typeof ExportOut>> {
    const filters = exportFilters(body);
    checkFiltersApply(body.data_type, filters);
    await this.records.requireWorkflows(organizationId, body.filters.workflow_ids);
    const id = newId('export');
    const record = await this.records.create({
      id,
      organizationId,
      dataType: body.data_type,
      format: body.format,
      request: { start_date: body.start_date, end_date: body.end_date, filters: body.filters },
      includeMetadata: body.include_metadata,
      status: 'processing',
      fileKey: `exports/${organizationId}/${id}.${EXTENSIONS[body.format]}`,
    }, claim);
    await dispatchJob(this.services, JOBS.export, { id, organization_id: organizationId });
    return this.toExportOut(record);
  }

  async get(organizationId: string, id: string) {
    return this.toExportOut(await this.records.find(organizationId, id));
  }

  async list(organizationId: string, page: Page) {
    return await this.records.list(organizationId, page, (r) => this.toExportOut(r));
  }

  /** The export's file; with include_metadata, csv and json downloads carry the metadata as headers. */
  async download(organizationId: string, id: string): Promise<FileHandle> {
    return await this.records.download(organizationId, id, (r): FileNaming => {
      const m = exportMetadata(r);
      return {
        filename: `${r.dataType}-${r.createdAt.toISOString().slice(0, 10)}-${r.id}.${EXTENSIONS[r.format]}`,
        contentType: EXPORT_CONTENT_TYPES[r.format],
        headers:
          r.includeMetadata && r.format !== 'xlsx'
            ? {
                'X-Export-Id': m.export_id,
                'X-Export-Generated-At': m.generated_at,
                'X-Export-Row-Count': String(m.row_count),
                'X-Export-Filters': asciiJson(m.filters),
              }
            : {},
      };
    });
  }

  toExportOut(r: AnalyticsExport): z.output<typeof ExportOut> {
    const percent = r.status === 'completed' ? 100 : r.rowsTotal ? Math.min(99, Math.floor((r.rowsWritten * 100) / r.rowsTotal)) : 0;
    return {
      export_id: r.id,
      ...temporalUiLink(this.services.config, exportWorkflowId(r.id)),
      data_type: r.dataType as ExportDataType,
      format: r.format,
      status: r.status,
      created_at: r.createdAt.toISOString(),
      estimated_completion: r.status === 'processing' ? estimatedCompletion(r.createdAt, r.rowsTotal).toISOString() : null,
      completed_at: r.completedAt?.toISOString() ?? null,
      expires_at: r.expiresAt?.toISOString() ?? null,
      download_url: this.downloadUrl(r),
      progress: { rows_written: r.rowsWritten, rows_total: r.rowsTotal, percent },
      file_size: r.fileSize,
      error: r.status === 'failed' ? { code: 'EXPORT_GENERATION_FAILED', message: r.errorMessage ?? 'generation failed' } : null,
      ...(r.includeMetadata && r.completedAt ? { metadata: exportMetadata(r) } : {}),
    };
  }

  private downloadUrl(r: AnalyticsExport): string {
    return this.records.url(`/v1/analytics/export/${r.id}/download`);
  }

  // ---- called by the export workflow's activities ----

  /** The job of a processing export; undefined when the record is gone or no longer processing. */
  async exportJob(id: string): Promise<ExportJob | undefined> {
    const r = await this.records.pending(id);
    if (!r) return undefined;
    const request = r.request as unknown as Pick<ExportRequest, 'start_date' | 'end_date' | 'filters'>;
    return {
      id: r.id,
      organizationId: r.organizationId,
      dataType: r.dataType as ExportDataType,
      format: r.format,
      filters: exportFilters(request),
      requestFilters: r.request,
      includeMetadata: r.includeMetadata,
      fileKey: r.fileKey!,
    };
  }

  async setExportTotal(id: string, rowsTotal: number): Promise<void> {
    await this.records.updatePending(id, { rowsTotal });
  }

  async setExportProgress(id: string, rowsWritten: number): Promise<void> {
    await this.records.updatePending(id, { rowsWritten });
  }

  async completeExport(id: string, file: { size: number; rows: number; generatedAt: string }): Promise<void> {
    await this.records.complete(id, file.size, undefined, (r, expiresAt) => {
      r.rowsWritten = file.rows;
      r.rowsTotal = file.rows;
      r.generatedAt = new Date(file.generatedAt);
      return {
        type: 'export.completed',
        data: {
          export_id: r.id,
          data_type: r.dataType,
          format: r.format,
          status: 'completed',
          row_count: file.rows,
          file_size: file.size,
          download_url: this.downloadUrl(r),
          expires_at: expiresAt.toISOString(),
        },
      };
    });
  }

  async failExport(id: string, message: string): Promise<void> {
    await this.records.fail(id, message, (r, error) => ({
      type: 'export.failed',
      data: { export_id: r.id, data_type: r.dataType, format: r.format, status: 'failed', error },
    }));
  }

  /** Deletes the files of exports past `expires_at` and marks them expired. */
  async expireFiles(now = new Date()): Promise<number> {
    return await this.records.expire(now);
  }
}

function exportFilters(body: Pick<ExportRequest, 'start_date' | 'end_date' | 'filters'>): ExportFilters {
  const { from, to } = dateFilter(body.start_date, body.end_date);
  return {
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
    ...(body.filters?.workflow_ids?.length ? { workflowIds: body.filters.workflow_ids } : {}),
    ...(body.filters?.channels?.length ? { channels: body.filters.channels } : {}),
  };
}

function exportMetadata(r: AnalyticsExport): ExportMetadata {
  return {
    export_id: r.id,
    data_type: r.dataType,
    format: r.format,
    filters: r.request,
    generated_at: (r.generatedAt ?? r.completedAt ?? r.createdAt).toISOString(),
    row_count: r.rowsWritten,
  };
}

/** JSON whose non-ASCII characters are escaped, so it is a valid HTTP header value. */
const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
