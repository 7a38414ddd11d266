/**
 * Owns `exportWorkflow` (`export:<id>`): prepare (read the request, count the rows) →
 * generate (query cursor → renderer → file storage, one streaming activity that heartbeats
 * its progress) → complete (record + `export.completed` event in one transaction). A
 * generation attempt cut by a crash is retried from scratch once its heartbeat times out;
 * the storage write is all-or-nothing, so the file is whole. When every attempt failed, the
 * record is marked failed with an `export.failed` event.
 */
import type { ExportActivities } from '../activities/exports.activities';
import { withSummary } from '../summaries.shared';
import type { FileJobInput, FileJobResult } from '../reports.shared';
import { failureMessage, fileJobActivities } from './file-jobs';

const { quick, generation } = fileJobActivities<ExportActivities>();

export async function exportWorkflow(input: FileJobInput): Promise<FileJobResult> {
  try {
    await withSummary(quick.prepareExport, `export ${input.id} · prepare`, input);
    const file = await withSummary(generation.generateExportFile, `export ${input.id} · generate file`, input);
    await withSummary(quick.completeExport, `export ${input.id} · complete`, input, file);
    return { status: 'completed', ...file };
  } catch (err) {
    const message = failureMessage(err);
    await withSummary(quick.failExport, `export ${input.id} · record failure`, input, message);
    return { status: 'failed', message };
  }
}
