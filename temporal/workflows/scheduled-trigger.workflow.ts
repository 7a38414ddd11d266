/**
 * Owns `scheduledTriggerWorkflow`: what a schedule trigger's Temporal Schedule starts on
 * every tick. It hands the firing to one activity, keyed by this run's workflow id, so an
 * activity retry never records or starts a second execution for the same tick.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { TriggerActivities } from '../activities/triggers.activities';
import type { FireScheduledTriggerResult, ScheduledTriggerInput } from '../triggers.shared';

const { fireScheduledTrigger } = proxyActivities<TriggerActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 20,
    // An AppError means the firing is already recorded as failed (or refused): retrying cannot help.
    nonRetryableErrorTypes: ['AppError'],
  },
});

export async function scheduledTriggerWorkflow(input: ScheduledTriggerInput): Promise<FireScheduledTriggerResult> {
  const info = workflowInfo();
  return await fireScheduledTrigger({ ...input, runKey: info.workflowId, firedAt: info.startTime.toISOString() });
}
