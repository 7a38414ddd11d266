/**
 * Owns the Temporal names of data exports and custom reports: workflow ids (`export:<id>`,
 * `report:<id>`), workflow types, the expiry schedule and the I/O types shared by the API,
 * the workflows and the activities. Imported by workflow code: types and strings only.
 */

export const exportWorkflowId = (exportId: string) => `export:${exportId}`;
export const reportWorkflowId = (reportId: string) => `report:${reportId}`;

export const EXPORT_WORKFLOW_TYPE = 'exportWorkflow';
export const REPORT_WORKFLOW_TYPE = 'reportWorkflow';
export const FILE_EXPIRY_WORKFLOW_TYPE = 'fileExpiryWorkflow';

/** One expiry schedule per task queue (a deployment's worker fleet), created at worker start. */
export const fileExpiryScheduleId = (taskQueue: string) => `analytics-file-expiry:${taskQueue}`;

export interface FileJobInput {
  organizationId: string;
  id: string;
}

/** What a generation activity wrote: the file's size, its data rows (0 for a report) and when its data was read. */
export interface GeneratedFile {
  size: number;
  rows: number;
  generatedAt: string;
}

export type FileJobResult = { status: 'completed'; size: number; rows: number } | { status: 'failed'; message: string };
