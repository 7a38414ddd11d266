/**
 * Owns custom reports as organization-scoped records: creation (validate, record, then
 * start the Temporal workflow; one whose start fails is started by the worker's
 * reconciler, src/modules/starts/durable-start.ts), reads and lists, downloads (a `FileHandle`
 * the route streams or redirects to), and the state changes the report workflow makes
 * (completed, failed), each committed with its `report.*` event.
 */
import type { HeldClaim } from '../../http/idempotency';
import type { Page } from '../../http/pagination';
import type { z } from '../../http/zod';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { temporalUiLink } from '../../temporal-ui';
import { reportWorkflowId } from '../../../temporal/reports.shared';
import { estimatedCompletion, type FileHandle, type FileJobService, FileRecords } from '../files/file-records';
import { dispatchStart as dispatchJob } from '../starts/durable-start';
import { JOBS } from '../starts/job-starts';
import { resolvePeriod } from '../metrics/execution-metrics';
import { Report } from './report.entity';
import { REPORT_CONTENT_TYPES } from './report.render';
import type { ReportIn, ReportOut } from './report.schemas';

type ReportRequest = z.output<typeof ReportIn>;

export class ReportService implements FileJobService<ReportRequest, z.output<typeof ReportOut>> {
  private readonly records: FileRecords<Report>;

  constructor(private readonly services: Services) {
    this.records = new FileRecords(services, Report, 'report', 'generating');
  }

  async create(organizationId: string, body: ReportRequest, claim?: HeldClaim): Promise<z.output<typeof ReportOut>> {
    resolvePeriod(body.filters.start_date, body.filters.end_date);
    await this.records.requireWorkflows(organizationId, body.filters.workflow_ids);
    const id = newId('report');
    const record = await this.records.create({
      id,
      organizationId,
      name: body.name,
      description: body.description ?? null,
      format: body.format,
      request: { metrics: body.metrics, filters: body.filters, group_by: body.group_by, granularity: body.granularity },
      status: 'generating',
      fileKey: `reports/${organizationId}/${id}.${body.format}`,
    }, claim);
    await dispatchJob(this.services, JOBS.report, { id, organization_id: organizationId });
    return this.toReportOut(record);
  }

  async get(organizationId: string, id: string) {
    return this.toReportOut(await this.records.find(organizationId, id));
  }

  async list(organizationId: string, page: Page) {
    return await this.records.list(organizationId, page, (r) => this.toReportOut(r));
  }

  async download(organizationId: string, id: string): Promise<FileHandle> {
    return await this.records.download(organizationId, id, (r) => ({
      filename: `${slug(r.name)}-${r.id}.${r.format}`,
      contentType: REPORT_CONTENT_TYPES[r.format],
    }));
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
      estimated_completion: r.status === 'generating' ? estimatedCompletion(r.createdAt, null).toISOString() : null,
      completed_at: r.completedAt?.toISOString() ?? null,
      expires_at: r.expiresAt?.toISOString() ?? null,
      download_url: this.downloadUrl(r),
      error: r.status === 'failed' ? { code: 'REPORT_GENERATION_FAILED', message: r.errorMessage ?? 'generation failed' } : null,
    };
  }

  private downloadUrl(r: Report): string {
    return this.records.url(`/v1/analytics/reports/${r.id}/download`);
  }

  // ---- called by the report workflow's activities ----

  /** The report while it is generating; undefined when gone or no longer generating. */
  async reportJob(id: string): Promise<Report | undefined> {
    return await this.records.pending(id);
  }

  async completeReport(id: string, file: { size: number; generatedAt: string }): Promise<void> {
    await this.records.complete(id, file.size, new Date(file.generatedAt), (r, expiresAt) => ({
      type: 'report.completed',
      data: {
        report_id: r.id,
        name: r.name,
        format: r.format,
        status: 'completed',
        download_url: this.downloadUrl(r),
        expires_at: expiresAt.toISOString(),
      },
    }));
  }

  async failReport(id: string, message: string): Promise<void> {
    await this.records.fail(id, message, (r, error) => ({
      type: 'report.failed',
      data: { report_id: r.id, name: r.name, format: r.format, status: 'failed', error },
    }));
  }

  /** Deletes the files of reports past `expires_at` and marks them expired. */
  async expireFiles(now = new Date()): Promise<number> {
    return await this.records.expire(now);
  }
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60) || 'report';
