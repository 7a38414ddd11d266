/** Custom reports under /v1/analytics (see docs/reports.md); the routes' shape is src/modules/files/file-job.routes.ts. */
import type { AnyRoute } from '../../http/route';
import type { Services } from '../../services';
import { FILE_DESCRIPTION, FileBody } from '../files/file-download.routes';
import { fileJobRoutes } from '../files/file-job.routes';
import { classifyReportIssue, ReportFileOut, ReportIn, ReportOut, ReportParams } from './report.schemas';
import { ReportService } from './report.service';

export function reportRoutes(services: Services): AnyRoute[] {
  return fileJobRoutes({
    service: new ReportService(services),
    out: ReportOut,
    params: ReportParams,
    idParam: 'report_id',
    create: {
      path: '/v1/analytics/reports',
      operationId: 'createReport',
      summary: 'Generate a custom report as CSV, JSON or PDF (in the background)',
      limits: ['analytics_reports'],
      body: ReportIn,
      classify: classifyReportIssue,
      errors: [[400, 'INVALID_METRICS | INVALID_DATE_RANGE'], [404, 'WORKFLOW_NOT_FOUND'], [422, 'INVALID_GRANULARITY']],
    },
    list: { path: '/v1/analytics/reports', operationId: 'listReports', summary: 'List reports, newest first' },
    get: { path: '/v1/analytics/reports/{report_id}', operationId: 'getReport', summary: 'Status of a report', errors: [[404, 'REPORT_NOT_FOUND']] },
    download: {
      path: '/v1/analytics/reports/{report_id}/download',
      operationId: 'downloadReport',
      summary: 'Download a report file',
      description: FILE_DESCRIPTION,
      produces: { content: { 'text/csv': FileBody, 'application/json': ReportFileOut, 'application/pdf': FileBody }, headers: ['Content-Disposition'] },
      errors: [[404, 'REPORT_NOT_FOUND'], [409, 'REPORT_NOT_READY', ['Retry-After']], [410, 'REPORT_EXPIRED']],
    },
  });
}
