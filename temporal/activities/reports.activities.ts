/**
 * Owns the activities of custom reports: generate (compute the numbers, render the file
 * into storage) and complete / fail (record + event). A generation attempt always writes
 * the whole file again.
 */
import { Context } from '@temporalio/activity';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../src/services';
import { writeReportFile } from '../../src/modules/reports/report.render';
import { ReportService } from '../../src/modules/reports/report.service';
import type { FileJobInput, GeneratedFile } from '../reports.shared';
import { stillPending } from './file-jobs.activities';

export function createReportActivities(deps: { services: Services }) {
  const { services } = deps;
  const reports = new ReportService(services);
  return {
    async generateReportFile(input: FileJobInput): Promise<GeneratedFile> {
      const report = stillPending(await reports.reportJob(input.id), `report ${input.id}`);
      const ctx = Context.current();
      ctx.heartbeat();
      const file = await writeReportFile(services, services.orm.em.fork() as EntityManager, report);
      return { size: file.size, rows: 0, generatedAt: file.generatedAt.toISOString() };
    },

    async completeReport(input: FileJobInput, file: GeneratedFile): Promise<void> {
      await reports.completeReport(input.id, file);
    },

    async failReport(input: FileJobInput, message: string): Promise<void> {
      await reports.failReport(input.id, message);
    },
  };
}

export type ReportActivities = ReturnType<typeof createReportActivities>;
