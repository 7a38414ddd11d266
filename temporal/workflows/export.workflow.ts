/**
 * Owns `exportWorkflow` (`export:<id>`): generate (query → file storage, one streaming
 * activity that heartbeats its progress and counts the rows for `rows_total` alongside) →
 * complete (record + `export.completed` event in one transaction, a local activity). A
 * generation attempt cut by a crash is retried from scratch once its heartbeat times out;
 * the storage write is all-or-nothing, so the file is whole. When every attempt failed, the
 * record is marked failed with an `export.failed` event.
 */
import { patched } from '@temporalio/workflow';
import type { ExportActivities } from '../activities/exports.activities';
import { withSummary } from '../summaries.shared';
import type { FileJobInput, FileJobResult } from '../reports.shared';
import { failureMessage, fileJobActivities } from './file-jobs';

const { quick, local, generation } = fileJobActivities<ExportActivities>();

/**
 * Patch id: the rows are counted inside the generation activity, alongside the file, and the
 * completion is a local activity, so the first byte is not behind a count and an activity
 * round trip, nor `completed` behind another round trip (about 150 ms of a million-row
 * export, docs/performance.md, `exports`). The completion is idempotent (it ends a pending
 * record once, under its row lock), so a local activity run again after a crash is harmless.
 * Runs whose history has no marker (started before it) replay prepare → generate → complete
 * as task-queue activities.
 */
export const EXPORT_COUNT_DURING_GENERATION = 'export-count-during-generation';

export async function exportWorkflow(input: FileJobInput): Promise<FileJobResult> {
  try {
    const counted = patched(EXPORT_COUNT_DURING_GENERATION);
    if (!counted) await withSummary(quick.prepareExport, `export ${input.id} · prepare`, input);
    const file = await withSummary(generation.generateExportFile, `export ${input.id} · generate file`, input);
    await withSummary(counted ? local.completeExport : quick.completeExport, `export ${input.id} · complete`, input, file);
    return { status: 'completed', ...file };
  } catch (err) {
    const message = failureMessage(err);
    await withSummary(quick.failExport, `export ${input.id} · record failure`, input, message);
    return { status: 'failed', message };
  }
}
