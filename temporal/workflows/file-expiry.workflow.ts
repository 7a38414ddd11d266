/** Owns `fileExpiryWorkflow`, run hourly by the expiry schedule (src/modules/files/file-expiry.schedule.ts). */
import type { FileExpiryActivities } from '../activities/file-jobs.activities';
import { withSummary } from '../summaries.shared';
import { fileJobActivities } from './file-jobs';

const { quick } = fileJobActivities<FileExpiryActivities>();

/** Deletes expired export and report files and marks their records expired. */
export async function fileExpiryWorkflow(): Promise<{ expired: number }> {
  return await withSummary(quick.expireFiles, 'expire files past retention');
}
