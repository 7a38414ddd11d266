/**
 * Owns what the export and report activities share: the refusal of a record that is no
 * longer pending, and the hourly expiry sweep of both kinds' files.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Services } from '../../src/services';
import { ExportService } from '../../src/modules/exports/export.service';
import { ReportService } from '../../src/modules/reports/report.service';
import { FILE_GENERATION_REJECTED } from '../failure-types';

/** The workflow starts after the record commits: a record gone or no longer pending is final. */
export function stillPending<T>(job: T | undefined, what: string): T {
  if (job === undefined) throw ApplicationFailure.create({ type: FILE_GENERATION_REJECTED, message: `${what} is no longer pending`, nonRetryable: true });
  return job;
}

export function createFileExpiryActivities(deps: { services: Services }) {
  const exports = new ExportService(deps.services);
  const reports = new ReportService(deps.services);
  return {
    /** Exports first, then reports, each a bounded batch per run. */
    async expireFiles(): Promise<{ expired: number }> {
      return { expired: (await exports.expireFiles()) + (await reports.expireFiles()) };
    },
  };
}

export type FileExpiryActivities = ReturnType<typeof createFileExpiryActivities>;
