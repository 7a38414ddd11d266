/**
 * Owns `scheduledTriggerWorkflow`: what a schedule trigger's Temporal Schedule starts on
 * every tick. It hands the firing to one activity, keyed by this run's workflow id, so an
 * activity retry never records or starts a second execution for the same tick.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { TriggerActivities } from '../activities/triggers.activities';
import { ACTIVITY_DECIDES_RETRY, TRIGGER_FIRING_FAILED } from '../failure-types';
import { type FireScheduledTriggerResult, type ScheduledTriggerInput } from '../triggers.shared';
import { withSummary } from '../summaries.shared';

/**
 * The activity decides its retries (temporal/failures.ts): an outage of our database is
 * waited out, anything else gets 20 attempts and then fails with TRIGGER_FIRING_FAILED.
 * A firing the domain refuses is not a failure: the activity returns it as skipped/failed.
 */
const { fireScheduledTrigger } = proxyActivities<TriggerActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { ...ACTIVITY_DECIDES_RETRY, nonRetryableErrorTypes: [TRIGGER_FIRING_FAILED] },
});

export async function scheduledTriggerWorkflow(input: ScheduledTriggerInput): Promise<FireScheduledTriggerResult> {
  const info = workflowInfo();
  return await withSummary(fireScheduledTrigger, `fire trigger ${input.triggerId}`, { ...input, runKey: info.workflowId, firedAt: info.startTime.toISOString() });
}
