/**
 * Owns the Temporal Schedule that expires report and export files: hourly, it runs
 * `fileExpiryWorkflow`, which deletes files past `expires_at` (REPORT_RETENTION_DAYS after
 * completion) and marks their records expired. Created idempotently at every worker start.
 */
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Services } from '../../services';
import { fileExpiryMetadata } from '../../temporal-metadata';
import { FILE_EXPIRY_WORKFLOW_TYPE, fileExpiryScheduleId } from '../../../temporal/reports.shared';

export async function ensureFileExpirySchedule(services: Services): Promise<string> {
  const scheduleId = fileExpiryScheduleId(services.config.TEMPORAL_TASK_QUEUE);
  try {
    await services.temporal.client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: '1 hour' }] },
      action: {
        type: 'startWorkflow',
        workflowType: FILE_EXPIRY_WORKFLOW_TYPE,
        workflowId: `${scheduleId}:run`,
        taskQueue: services.config.TEMPORAL_TASK_QUEUE,
        args: [],
        workflowExecutionTimeout: '30 minutes',
        ...fileExpiryMetadata(services.config),
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
    });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  return scheduleId;
}
