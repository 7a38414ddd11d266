/** Data exports and custom reports under /v1/analytics (see docs/reports.md). */
import { PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { ReportService } from './report.service';
import { classifyReportIssue, ExportIn, ExportOut, ExportParams, ListQuery, ReportFileOut, ReportIn, ReportOut, ReportParams } from './report.schemas';

const FILE_DESCRIPTION =
  'Streams the file with Content-Type, Content-Disposition and Content-Length; with FILE_STORAGE=s3 and ' +
  'S3_PRESIGNED_DOWNLOAD_TTL_SECONDS > 0 it answers 302 to a short-lived presigned URL instead.';

/** A downloaded file's bytes. */
const FileBody = z.string().openapi({ format: 'binary' });

export function reportRoutes(services: Services): AnyRoute[] {
  const service = new ReportService(services);
  const tag = 'Analytics: reports and exports';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/analytics/export',
      operationId: 'createExport',
      summary: 'Export raw data as CSV, NDJSON or xlsx (generated in the background)',
      tag,
      scope: 'analytics:write',
      limits: ['analytics_export'],
      body: ExportIn,
      status: 201,
      response: z.object({ data: ExportOut }),
      errors: [[400, 'INVALID_DATE_RANGE'], [404, 'WORKFLOW_NOT_FOUND']],
      async handler({ body, credential }) {
        return { data: await service.createExport(credential.organizationId, body) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/exports',
      operationId: 'listExports',
      summary: 'List exports, newest first',
      tag,
      scope: 'analytics:read',
      query: ListQuery,
      response: z.object({ data: z.array(ExportOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        return await service.listExports(credential.organizationId, query);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/export/{export_id}',
      operationId: 'getExport',
      summary: 'Status and progress of an export',
      tag,
      scope: 'analytics:read',
      params: ExportParams,
      response: z.object({ data: ExportOut }),
      errors: [[404, 'EXPORT_NOT_FOUND']],
      async handler({ params, credential }) {
        return { data: await service.getExport(credential.organizationId, params.export_id) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/export/{export_id}/download',
      operationId: 'downloadExport',
      summary: 'Download an export file',
      description: `${FILE_DESCRIPTION} With include_metadata, csv and json downloads carry X-Export-Id, X-Export-Generated-At, X-Export-Row-Count and X-Export-Filters.`,
      tag,
      scope: 'analytics:read',
      params: ExportParams,
      produces: {
        content: { 'text/csv': FileBody, 'application/x-ndjson': FileBody, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': FileBody },
        headers: ['Content-Disposition'],
        optionalHeaders: ['X-Export-Id', 'X-Export-Generated-At', 'X-Export-Row-Count', 'X-Export-Filters'],
      },
      errors: [[404, 'EXPORT_NOT_FOUND'], [409, 'EXPORT_NOT_READY', ['Retry-After']], [410, 'EXPORT_EXPIRED']],
      async handler({ params, credential, ctx }) {
        await service.downloadExport(ctx, credential.organizationId, params.export_id);
        return undefined;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/analytics/reports',
      operationId: 'createReport',
      summary: 'Generate a custom report as CSV, JSON or PDF (in the background)',
      tag,
      scope: 'analytics:write',
      limits: ['analytics_reports'],
      body: ReportIn,
      classify: classifyReportIssue,
      status: 201,
      response: z.object({ data: ReportOut }),
      errors: [[400, 'INVALID_METRICS | INVALID_DATE_RANGE'], [404, 'WORKFLOW_NOT_FOUND'], [422, 'INVALID_GRANULARITY']],
      async handler({ body, credential }) {
        return { data: await service.createReport(credential.organizationId, body) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/reports',
      operationId: 'listReports',
      summary: 'List reports, newest first',
      tag,
      scope: 'analytics:read',
      query: ListQuery,
      response: z.object({ data: z.array(ReportOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        return await service.listReports(credential.organizationId, query);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/reports/{report_id}',
      operationId: 'getReport',
      summary: 'Status of a report',
      tag,
      scope: 'analytics:read',
      params: ReportParams,
      response: z.object({ data: ReportOut }),
      errors: [[404, 'REPORT_NOT_FOUND']],
      async handler({ params, credential }) {
        return { data: service.toReportOut(await service.findReport(credential.organizationId, params.report_id)) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/reports/{report_id}/download',
      operationId: 'downloadReport',
      summary: 'Download a report file',
      description: FILE_DESCRIPTION,
      tag,
      scope: 'analytics:read',
      params: ReportParams,
      produces: { content: { 'text/csv': FileBody, 'application/json': ReportFileOut, 'application/pdf': FileBody }, headers: ['Content-Disposition'] },
      errors: [[404, 'REPORT_NOT_FOUND'], [409, 'REPORT_NOT_READY', ['Retry-After']], [410, 'REPORT_EXPIRED']],
      async handler({ params, credential, ctx }) {
        await service.downloadReport(ctx, credential.organizationId, params.report_id);
        return undefined;
      },
    }),
  ];
}
