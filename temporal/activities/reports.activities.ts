/**
 * Owns the activities of exports and reports: prepare (count the rows, for progress),
 * generate (stream the file into storage while heartbeating the row count), complete /
 * fail (record + event), and the expiry sweep. A generation attempt always writes the
 * whole file again: a crashed attempt's partial output is never under the final key.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Client } from 'pg';
import { failpoint } from '../../src/failpoints';
import type { Services } from '../../src/services';
import { exportCountQuery } from '../../src/modules/reports/export-sources';
import { writeExportFile } from '../../src/modules/reports/export-writer';
import { writeReportFile } from '../../src/modules/reports/report-render';
import { ReportService } from '../../src/modules/reports/report.service';
import { FILE_GENERATION_REJECTED, type FileJobInput } from '../reports.shared';

/** How often a running generation heartbeats and saves its progress. */
const PROGRESS_INTERVAL_MS = 1_000;
/** Test-only: the `export.mid_file` failpoint fires once this many rows are written. */
const FAILPOINT_ROW = 2_000;

/** The workflow starts after the record commits: a record gone or no longer pending is final. */
function usable<T>(job: T | undefined, what: string): T {
  if (job === undefined) throw ApplicationFailure.create({ type: FILE_GENERATION_REJECTED, message: `${what} is no longer pending`, nonRetryable: true });
  return job;
}

export interface GeneratedExportFile {
  size: number;
  rows: number;
  generatedAt: string;
}

export function createReportActivities(deps: { services: Services }) {
  const { services } = deps;
  const reports = new ReportService(services);
  return {
    async prepareExport(input: FileJobInput): Promise<void> {
      const job = usable(await reports.exportJob(input.id), `export ${input.id}`);
      if (job.dataType === 'workflow_metrics') return;
      const { text, values } = exportCountQuery(job.dataType, job.organizationId, job.filters);
      const client = new Client({ connectionString: services.config.DATABASE_URL });
      await client.connect();
      try {
        const res = await client.query<{ n: number }>(text, values);
        await reports.setExportTotal(job.id, res.rows[0]?.n ?? 0);
      } finally {
        await client.end();
      }
    },

    async generateExportFile(input: FileJobInput): Promise<GeneratedExportFile> {
      const job = usable(await reports.exportJob(input.id), `export ${input.id}`);
      const ctx = Context.current();
      let rows = 0;
      let saved = -1;
      const tick = setInterval(() => {
        ctx.heartbeat({ rowsWritten: rows });
        if (rows === saved) return;
        saved = rows;
        reports.setExportProgress(job.id, rows).catch((err: unknown) => services.logger.warn({ err }, 'could not save export progress'));
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
      }
    },

    async completeExport(input: FileJobInput, file: GeneratedExportFile): Promise<void> {
      await reports.completeExport(input.id, file);
    },

    async failExport(input: FileJobInput, message: string): Promise<void> {
      await reports.failExport(input.id, message);
    },

    async generateReportFile(input: FileJobInput): Promise<GeneratedExportFile> {
      const report = usable(await reports.reportJob(input.id), `report ${input.id}`);
      const ctx = Context.current();
      ctx.heartbeat();
      const file = await writeReportFile(services, services.orm.em.fork() as EntityManager, report);
      return { size: file.size, rows: 0, generatedAt: file.generatedAt.toISOString() };
    },

    async completeReport(input: FileJobInput, file: GeneratedExportFile): Promise<void> {
      await reports.completeReport(input.id, file);
    },

    async failReport(input: FileJobInput, message: string): Promise<void> {
      await reports.failReport(input.id, message);
    },

    async expireFiles(): Promise<{ expired: number }> {
      return { expired: await reports.expireFiles() };
    },
  };
}

export type ReportActivities = ReturnType<typeof createReportActivities>;
