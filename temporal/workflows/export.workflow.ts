/**
 * Owns `exportWorkflow` (`export:<id>`) and `reportWorkflow` (`report:<id>`): prepare (read
 * the request, count the rows) → generate (query cursor → renderer → file storage, one
 * streaming activity that heartbeats its progress) → complete (record + `*.completed`
 * event in one transaction). A generation attempt cut by a crash is retried from scratch
 * once its heartbeat times out; the storage write is all-or-nothing, so the file is whole.
 * When every attempt failed, the record is marked failed with a `*.failed` event.
 */
import type { RetryPolicy } from '@temporalio/common';
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { ReportActivities } from '../activities/reports.activities';
import { withSummary } from '../summaries.shared';
import { FILE_GENERATION_REJECTED, type FileJobInput, type FileJobResult } from '../reports.shared';

const retry: RetryPolicy = { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 5, nonRetryableErrorTypes: [FILE_GENERATION_REJECTED] };

const quick = proxyActivities<ReportActivities>({ startToCloseTimeout: '1 minute', retry });
const generation = proxyActivities<ReportActivities>({
  // Large exports take long; a dead worker is noticed by the missing heartbeat instead.
  startToCloseTimeout: '6 hours',
  heartbeatTimeout: '20 seconds',
  retry,
});

function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure || cause instanceof Error) return cause.message;
  return 'generation failed';
}

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

/** Run hourly by the expiry schedule: deletes expired files and marks their records expired. */
export async function fileExpiryWorkflow(): Promise<{ expired: number }> {
  return await withSummary(quick.expireFiles, 'expire files past retention');
}
