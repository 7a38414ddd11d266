/** Data exports under /v1/analytics (see docs/reports.md); the routes' shape is src/modules/files/file-job.routes.ts. */
import type { AnyRoute } from '../../http/route';
import type { Services } from '../../services';
import { FILE_DESCRIPTION, FileBody } from '../files/file-download.routes';
import { fileJobRoutes } from '../files/file-job.routes';
import { ExportIn, ExportOut, ExportParams } from './export.schemas';
import { ExportService } from './export.service';

export function exportRoutes(services: Services): AnyRoute[] {
  return fileJobRoutes({
    service: new ExportService(services),
    out: ExportOut,
    params: ExportParams,
    idParam: 'export_id',
    create: {
      path: '/v1/analytics/export',
      operationId: 'createExport',
      summary: 'Export raw data as CSV, NDJSON or xlsx (generated in the background)',
      limits: ['analytics_export'],
      body: ExportIn,
      errors: [[400, 'INVALID_DATE_RANGE'], [404, 'WORKFLOW_NOT_FOUND']],
    },
    list: { path: '/v1/analytics/exports', operationId: 'listExports', summary: 'List exports, newest first' },
    get: {
      path: '/v1/analytics/export/{export_id}',
      operationId: 'getExport',
      summary: 'Status and progress of an export',
      errors: [[404, 'EXPORT_NOT_FOUND']],
    },
    download: {
      path: '/v1/analytics/export/{export_id}/download',
      operationId: 'downloadExport',
      summary: 'Download an export file',
      description: `${FILE_DESCRIPTION} With include_metadata, csv and json downloads carry X-Export-Id, X-Export-Generated-At, X-Export-Row-Count and X-Export-Filters.`,
      produces: {
        content: { 'text/csv': FileBody, 'application/x-ndjson': FileBody, 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': FileBody },
        headers: ['Content-Disposition'],
        optionalHeaders: ['X-Export-Id', 'X-Export-Generated-At', 'X-Export-Row-Count', 'X-Export-Filters'],
      },
      errors: [[404, 'EXPORT_NOT_FOUND'], [409, 'EXPORT_NOT_READY', ['Retry-After']], [410, 'EXPORT_EXPIRED']],
    },
  });
}
