/** Custom reports under /v1/analytics (see docs/reports.md). */
import { PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { REPORTS_AND_EXPORTS_TAG } from '../exports/export.routes';
import { FILE_DESCRIPTION, FileBody, sendFile } from '../files/file-download.routes';
import { ListQuery } from '../files/file-records.schemas';
import { classifyReportIssue, ReportFileOut, ReportIn, ReportOut, ReportParams } from './report.schemas';
import { ReportService } from './report.service';

export function reportRoutes(services: Services): AnyRoute[] {
  const service = new ReportService(services);
  const tag = REPORTS_AND_EXPORTS_TAG;
  return [
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
        return { data: await service.getReport(credential.organizationId, params.report_id) };
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
        sendFile(ctx, await service.downloadReport(credential.organizationId, params.report_id));
        return undefined;
      },
    }),
  ];
}
