/** Data exports under /v1/analytics (see docs/reports.md). */
import { PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { FILE_DESCRIPTION, FileBody, sendFile } from '../files/file-download.routes';
import { ListQuery } from '../files/file-records.schemas';
import { ExportIn, ExportOut, ExportParams } from './export.schemas';
import { ExportService } from './export.service';

/** Shared with the report routes: one OpenAPI tag for both. */
export const REPORTS_AND_EXPORTS_TAG = 'Analytics: reports and exports';

export function exportRoutes(services: Services): AnyRoute[] {
  const service = new ExportService(services);
  const tag = REPORTS_AND_EXPORTS_TAG;
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
        sendFile(ctx, await service.downloadExport(credential.organizationId, params.export_id));
        return undefined;
      },
    }),
  ];
}
