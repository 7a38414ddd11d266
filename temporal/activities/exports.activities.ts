/**
 * Owns the activities of data exports: generate (stream the file into storage while
 * heartbeating the row count, and count the rows for progress alongside), complete / fail
 * (record + event); prepare (the count alone) only for runs started before the count moved
 * into generation. A generation attempt always writes the whole file again: a crashed
 * attempt's partial output is never under the final key.
 */
import { Context } from '@temporalio/activity';
import { failpoint } from '../../src/failpoints';
import type { Services } from '../../src/services';
import { exportCountQuery } from '../../src/modules/exports/export.sources';
import { type ExportJob, writeExportFile } from '../../src/modules/exports/export.writer';
import { ExportService } from '../../src/modules/exports/export.service';
import type { FileJobInput, GeneratedFile } from '../reports.shared';
import { stillPending } from './file-jobs.activities';

/** How often a running generation heartbeats and saves its progress. */
const PROGRESS_INTERVAL_MS = 1_000;
/** Test-only: the `export.mid_file` failpoint fires once this many rows are written. */
const FAILPOINT_ROW = 2_000;

export function createExportActivities(deps: { services: Services }) {
  const { services } = deps;
  const exports = new ExportService(services);
  /** Records `rows_total` (progress only: the completion records the rows the file holds). */
  const countRows = async (job: ExportJob): Promise<void> => {
    if (job.dataType === 'workflow_metrics') return;
    const { text, values } = exportCountQuery(job.dataType, job.organizationId, job.filters);
    // The process's shared pg pool: one statement, no connection of its own to open and close.
    const res = await services.hotPool.query<{ n: number }>(text, values);
    await exports.setExportTotal(job.id, res.rows[0]?.n ?? 0);
  };

  return {
    /** Only runs started before EXPORT_COUNT_DURING_GENERATION (export.workflow.ts) still schedule it. */
    async prepareExport(input: FileJobInput): Promise<void> {
      await countRows(stillPending(await exports.exportJob(input.id), `export ${input.id}`));
    },

    async generateExportFile(input: FileJobInput): Promise<GeneratedFile> {
      const job = stillPending(await exports.exportJob(input.id), `export ${input.id}`);
      // Counted while the file is written rather than before: the count of a million rows
      // took ~80 ms, plus an activity round trip, ahead of the first byte (docs/performance.md,
      // `exports`). A failed count only leaves `rows_total` null until the completion sets it.
      const counting = countRows(job).catch((err: unknown) => services.logger.warn({ err, export_id: job.id }, 'could not count the export rows'));
      const ctx = Context.current();
      let rows = 0;
      let saved = -1;
      const tick = setInterval(() => {
        ctx.heartbeat({ rowsWritten: rows });
        if (rows === saved) return;
        saved = rows;
        exports.setExportProgress(job.id, rows).catch((err: unknown) => services.logger.warn({ err }, 'could not save export progress'));
      }, PROGRESS_INTERVAL_MS);
      try {
        ctx.heartbeat({ rowsWritten: 0 });
        const file = await writeExportFile(services, job, (n) => {
          rows = n;
          if (n >= FAILPOINT_ROW) failpoint(services.config, 'export.mid_file');
        });
        return { size: file.size, rows: file.rows, generatedAt: file.generatedAt.toISOString() };
      } finally {
        clearInterval(tick);
        // Before the completion, which sets the final total: a late count must not follow it.
        await counting;
      }
    },

    async completeExport(input: FileJobInput, file: GeneratedFile): Promise<void> {
      await exports.completeExport(input.id, file);
    },

    async failExport(input: FileJobInput, message: string): Promise<void> {
      await exports.failExport(input.id, message);
    },
  };
}

export type ExportActivities = ReturnType<typeof createExportActivities>;
