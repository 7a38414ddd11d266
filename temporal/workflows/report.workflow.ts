/**
 * Owns `reportWorkflow` (`report:<id>`): generate (compute the numbers, render CSV, JSON or
 * PDF into file storage) → complete (record + `report.completed` event in one transaction).
 * A generation attempt cut by a crash is retried from scratch; when every attempt failed,
 * the record is marked failed with a `report.failed` event.
 */
import type { ReportActivities } from '../activities/reports.activities';
import { withSummary } from '../summaries.shared';
import type { FileJobInput, FileJobResult } from '../reports.shared';
import { failureMessage, fileJobActivities } from './file-jobs';

const { quick, generation } = fileJobActivities<ReportActivities>();

export async function reportWorkflow(input: FileJobInput): Promise<FileJobResult> {
  try {
    const file = await withSummary(generation.generateReportFile, `report ${input.id} · generate file`, input);
    await withSummary(quick.completeReport, `report ${input.id} · complete`, input, file);
    return { status: 'completed', ...file };
  } catch (err) {
    const message = failureMessage(err);
    await withSummary(quick.failReport, `report ${input.id} · record failure`, input, message);
    return { status: 'failed', message };
  }
}
