/**
 * Owns exports and reports as organization-scoped records: creation (validate, record,
 * then start the Temporal workflow; one whose start fails is started by the worker's
 * reconciler, src/modules/jobs/job-starter.ts), reads and lists, downloads (not ready / expired / streamed or redirected), and
 * the state changes the workflows make (progress, completed, failed, expired), each
 * completion or failure committed with its `export.*` / `report.*` event.
 */
import { type EntityName, type FilterQuery, LockMode, type OrderDefinition } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from 'koa';
import { conflict, DomainError, gone, notFound } from '../../errors';
import { offsetOf, type Page, paginate } from '../../http/pagination';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { dispatchJob, JOBS } from '../jobs/job-starter';
import type { z } from '../../http/zod';
import { dateFilter, resolvePeriod } from '../metrics/execution-metrics';
import { checkFiltersApply, type ExportDataType, type ExportFilters } from './export-sources';
import { EXPORT_CONTENT_TYPES, type ExportJob, type ExportMetadata } from './export-writer';
import { AnalyticsExport, Report } from './report.entity';
import type { ExportIn, ExportOut, ReportIn, ReportOut } from './report.schemas';
import { temporalUiLink } from '../../temporal-ui';
import { exportWorkflowId, reportWorkflowId } from '../../../temporal/reports.shared';

/** Rough throughput used for `estimated_completion` (rows per second, and a floor). */
const ESTIMATED_ROWS_PER_SECOND = 50_000;
const MIN_ESTIMATE_MS = 5_000;

export const REPORT_CONTENT_TYPES = { csv: 'text/csv; charset=utf-8', json: 'application/json', pdf: 'application/pdf' } as const;

const EXTENSIONS = { csv: 'csv', json: 'ndjson', xlsx: 'xlsx' } as const;

/**
 * Refuses the download of a job's file that is not there: still being written (409 with
 * Retry-After), failed (409, no file) or past `expires_at` (410, even before the sweep).
 */
function requireFile(kind: 'export' | 'report', r: AnalyticsExport | Report): void {
  const prefix = kind.toUpperCase();
  if (r.status === 'processing' || r.status === 'generating') {
    throw new DomainError('conflict', `${prefix}_NOT_READY`, `The ${kind} is still ${r.status}`, { retryAfterSeconds: 5 });
  }
  if (r.status === 'failed') throw conflict(`${prefix}_NOT_READY`, `The ${kind} failed and has no file: ${r.errorMessage ?? 'unknown error'}`);
  if (r.status === 'expired' || (r.expiresAt && r.expiresAt <= new Date())) throw gone(`${prefix}_EXPIRED`, `The ${kind} file has expired`);
}

type ExportRequest = z.output<typeof ExportIn>;
type ReportRequest = z.output<typeof ReportIn>;

export class ReportService {
  constructor(private readonly services: Services) {}

  private em(): EntityManager {
    return this.services.orm.em.fork() as EntityManager;
  }

  private url(path: string) {
    return `${this.services.config.BASE_URL}${path}`;
  }

  /** Every id must be a live workflow of the organization: another one is 404 (no existence leak). */
  private async requireWorkflows(em: EntityManager, organizationId: string, ids: string[] | undefined): Promise<void> {
    if (!ids?.length) return;
    const found = await em.execute<Array<{ id: string }>>(
      `select id from workflows where organization_id = ? and deleted_at is null and id in (${ids.map(() => '?').join(', ')})`,
      [organizationId, ...ids],
    );
    const known = new Set(found.map((r) => r.id));
    const missing = ids.findIndex((id) => !known.has(id));
    if (missing >= 0) {
      throw notFound('WORKFLOW_NOT_FOUND', `Workflow ${ids[missing]}`, `filters.workflow_ids[${missing}]`);
    }
  }

  // ---- exports ----

  async createExport(organizationId: string, body: ExportRequest): Promise<z.output<typeof ExportOut>> {
    const filters = exportFilters(body);
    checkFiltersApply(body.data_type, filters);
    const em = this.em();
    await this.requireWorkflows(em, organizationId, body.filters.workflow_ids);
    const id = newId('export');
    const record = await em.transactional(async (tx) => {
      const r = tx.create(AnalyticsExport, {
        id,
        organizationId,
        dataType: body.data_type,
        format: body.format,
        request: { start_date: body.start_date, end_date: body.end_date, filters: body.filters },
        includeMetadata: body.include_metadata,
        status: 'processing',
        fileKey: `exports/${organizationId}/${id}.${EXTENSIONS[body.format]}`,
      });
      await tx.flush();
      return r;
    });
    await dispatchJob(this.services, JOBS.export, { id, organization_id: organizationId });
    return this.toExportOut(record);
  }

  private async findExport(organizationId: string, id: string, em = this.em()): Promise<AnalyticsExport> {
    const r = await em.findOne(AnalyticsExport, { id, organizationId });
    if (!r) throw notFound('EXPORT_NOT_FOUND', 'Export');
    return r;
  }

  async getExport(organizationId: string, id: string) {
    return this.toExportOut(await this.findExport(organizationId, id));
  }

  /** One page of an organization's exports or reports, newest first. */
  private async listNewestFirst<T extends AnalyticsExport | Report, O>(entity: EntityName<T>, organizationId: string, page: Page, out: (r: T) => O) {
    const [items, total] = await this.em().findAndCount(entity, { organizationId } as FilterQuery<T>, {
      orderBy: { createdAt: 'desc', id: 'desc' } as OrderDefinition<T>,
      limit: page.limit,
      offset: offsetOf(page),
    });
    return paginate(items.map((r) => out(r as T)), page, total);
  }

  async listExports(organizationId: string, page: Page) {
    return await this.listNewestFirst(AnalyticsExport, organizationId, page, (r) => this.toExportOut(r));
  }

  async downloadExport(ctx: Context, organizationId: string, id: string): Promise<void> {
    const r = await this.findExport(organizationId, id);
    requireFile('export', r);
    const filename = `${r.dataType}-${r.createdAt.toISOString().slice(0, 10)}-${r.id}.${EXTENSIONS[r.format]}`;
    if (r.includeMetadata && r.format !== 'xlsx') {
      const m = exportMetadata(r);
      ctx.set({
        'X-Export-Id': m.export_id,
        'X-Export-Generated-At': m.generated_at,
        'X-Export-Row-Count': String(m.row_count),
        'X-Export-Filters': asciiJson(m.filters),
      });
    }
    await this.sendFile(ctx, r.fileKey!, filename, EXPORT_CONTENT_TYPES[r.format]);
  }

  private async sendFile(ctx: Context, key: string, filename: string, contentType: string) {
    const redirect = await this.services.files.presignedDownloadUrl(key, filename, contentType);
    if (redirect) {
      ctx.status = 302;
      ctx.redirect(redirect);
      return;
    }
    const file = await this.services.files.read(key);
    ctx.status = 200;
    ctx.type = contentType;
    ctx.attachment(filename);
    ctx.body = file.stream;
    ctx.length = file.size;
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
      estimated_completion: r.status === 'processing' ? estimate(r.createdAt, r.rowsTotal).toISOString() : null,
      completed_at: r.completedAt?.toISOString() ?? null,
      expires_at: r.expiresAt?.toISOString() ?? null,
      download_url: this.url(`/v1/analytics/export/${r.id}/download`),
      progress: { rows_written: r.rowsWritten, rows_total: r.rowsTotal, percent },
      file_size: r.fileSize,
      error: r.status === 'failed' ? { code: 'EXPORT_GENERATION_FAILED', message: r.errorMessage ?? 'generation failed' } : null,
      ...(r.includeMetadata && r.completedAt ? { metadata: exportMetadata(r) } : {}),
    };
  }

  // ---- export jobs (called by the workflow's activities) ----

  /** The job of a processing export; undefined when the record is gone or no longer processing. */
  async exportJob(id: string): Promise<ExportJob | undefined> {
    const r = await this.em().findOne(AnalyticsExport, { id });
    if (r?.status !== 'processing') return undefined;
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
    await this.em().nativeUpdate(AnalyticsExport, { id, status: 'processing' }, { rowsTotal });
  }

  async setExportProgress(id: string, rowsWritten: number): Promise<void> {
    await this.em().nativeUpdate(AnalyticsExport, { id, status: 'processing' }, { rowsWritten });
  }

  /**
   * Ends a pending export or report once: under its row lock, `end` sets the final state and
   * returns the event committed with it; a record no longer pending is left as it is.
   */
  private async finish<T extends AnalyticsExport | Report>(
    entity: EntityName<T>,
    id: string,
    end: (r: T) => Omit<Parameters<typeof recordEvent>[1], 'organizationId'>,
  ): Promise<void> {
    await this.em().transactional(async (tx) => {
      // Pending is `processing` for an export and `generating` for a report.
      const where = { id, status: { $in: ['processing', 'generating'] } } as FilterQuery<T>;
      const r = await tx.findOne(entity, where, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!r) return;
      recordEvent(tx, { organizationId: r.organizationId, ...end(r as T) });
    });
  }

  private complete(r: AnalyticsExport | Report, size: number, completedAt: Date): Date {
    r.status = 'completed';
    r.fileSize = size;
    r.completedAt = completedAt;
    r.expiresAt = new Date(r.completedAt.getTime() + this.services.config.REPORT_RETENTION_DAYS * 86_400_000);
    return r.expiresAt;
  }

  private fail(r: AnalyticsExport | Report, message: string): string {
    r.status = 'failed';
    r.errorMessage = message.slice(0, 1000);
    r.completedAt = new Date();
    return r.errorMessage;
  }

  async completeExport(id: string, file: { size: number; rows: number; generatedAt: string }): Promise<void> {
    await this.finish(AnalyticsExport, id, (r) => {
      r.rowsWritten = file.rows;
      r.rowsTotal = file.rows;
      r.generatedAt = new Date(file.generatedAt);
      const expiresAt = this.complete(r, file.size, new Date());
      return {
        type: 'export.completed',
        data: {
          export_id: r.id,
          data_type: r.dataType,
          format: r.format,
          status: 'completed',
          row_count: file.rows,
          file_size: file.size,
          download_url: this.url(`/v1/analytics/export/${r.id}/download`),
          expires_at: expiresAt.toISOString(),
        },
      };
    });
  }

  async failExport(id: string, message: string): Promise<void> {
    await this.finish(AnalyticsExport, id, (r) => {
      const error = { code: 'EXPORT_GENERATION_FAILED', message: this.fail(r, message) };
      return { type: 'export.failed', data: { export_id: r.id, data_type: r.dataType, format: r.format, status: 'failed', error } };
    });
  }

  // ---- reports ----

  async createReport(organizationId: string, body: ReportRequest): Promise<z.output<typeof ReportOut>> {
    resolvePeriod(body.filters.start_date, body.filters.end_date);
    const em = this.em();
    await this.requireWorkflows(em, organizationId, body.filters.workflow_ids);
    const id = newId('report');
    const record = await em.transactional(async (tx) => {
      const r = tx.create(Report, {
        id,
        organizationId,
        name: body.name,
        description: body.description ?? null,
        format: body.format,
        request: { metrics: body.metrics, filters: body.filters, group_by: body.group_by, granularity: body.granularity },
        status: 'generating',
        fileKey: `reports/${organizationId}/${id}.${body.format}`,
      });
      await tx.flush();
      return r;
    });
    await dispatchJob(this.services, JOBS.report, { id, organization_id: organizationId });
    return this.toReportOut(record);
  }

  async findReport(organizationId: string, id: string, em = this.em()): Promise<Report> {
    const r = await em.findOne(Report, { id, organizationId });
    if (!r) throw notFound('REPORT_NOT_FOUND', 'Report');
    return r;
  }

  async listReports(organizationId: string, page: Page) {
    return await this.listNewestFirst(Report, organizationId, page, (r) => this.toReportOut(r));
  }

  async downloadReport(ctx: Context, organizationId: string, id: string): Promise<void> {
    const r = await this.findReport(organizationId, id);
    requireFile('report', r);
    await this.sendFile(ctx, r.fileKey!, `${slug(r.name)}-${r.id}.${r.format}`, REPORT_CONTENT_TYPES[r.format]);
  }

  toReportOut(r: Report): z.output<typeof ReportOut> {
    return {
      report_id: r.id,
      ...temporalUiLink(this.services.config, reportWorkflowId(r.id)),
      name: r.name,
      description: r.description,
      format: r.format,
      status: r.status,
      created_at: r.createdAt.toISOString(),
      estimated_completion: r.status === 'generating' ? estimate(r.createdAt, null).toISOString() : null,
      completed_at: r.completedAt?.toISOString() ?? null,
      expires_at: r.expiresAt?.toISOString() ?? null,
      download_url: this.url(`/v1/analytics/reports/${r.id}/download`),
      error: r.status === 'failed' ? { code: 'REPORT_GENERATION_FAILED', message: r.errorMessage ?? 'generation failed' } : null,
    };
  }

  /** As `exportJob`: undefined when gone or no longer generating. */
  async reportJob(id: string): Promise<Report | undefined> {
    const r = await this.em().findOne(Report, { id });
    return r?.status === 'generating' ? r : undefined;
  }

  async completeReport(id: string, file: { size: number; generatedAt: string }): Promise<void> {
    await this.finish(Report, id, (r) => {
      const expiresAt = this.complete(r, file.size, new Date(file.generatedAt));
      return {
        type: 'report.completed',
        data: {
          report_id: r.id,
          name: r.name,
          format: r.format,
          status: 'completed',
          download_url: this.url(`/v1/analytics/reports/${r.id}/download`),
          expires_at: expiresAt.toISOString(),
        },
      };
    });
  }

  async failReport(id: string, message: string): Promise<void> {
    await this.finish(Report, id, (r) => {
      const error = { code: 'REPORT_GENERATION_FAILED', message: this.fail(r, message) };
      return { type: 'report.failed', data: { report_id: r.id, name: r.name, format: r.format, status: 'failed', error } };
    });
  }

  // ---- expiry ----

  /** Deletes the files of completed exports and reports past `expires_at` and marks them expired. */
  async expireFiles(now = new Date()): Promise<number> {
    let expired = 0;
    for (const entity of [AnalyticsExport, Report] as const) {
      const due = await this.em().find(entity as typeof AnalyticsExport, { status: 'completed', expiresAt: { $lte: now } }, { limit: 1000 });
      for (const r of due) {
        // File first: a crash in between leaves a completed record whose file is gone,
        // which the next sweep marks expired (deleting a missing file is a no-op).
        if (r.fileKey) await this.services.files.delete(r.fileKey);
        expired += await this.em().nativeUpdate(entity as typeof AnalyticsExport, { id: r.id, status: 'completed' }, { status: 'expired' });
      }
    }
    return expired;
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

function estimate(createdAt: Date, rows: number | null): Date {
  const ms = Math.max(MIN_ESTIMATE_MS, rows === null ? 0 : (rows / ESTIMATED_ROWS_PER_SECOND) * 1000);
  return new Date(createdAt.getTime() + ms);
}

/** JSON whose non-ASCII characters are escaped, so it is a valid HTTP header value. */
const asciiJson = (v: unknown) => JSON.stringify(v).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60) || 'report';
