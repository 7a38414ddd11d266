/**
 * Owns `replayWorkflow`: one bulk replay. Each batch is one activity that retries up to
 * `ratePerSecond` executions after the cursor; a one-second timer between full batches
 * holds the rate. After `batchesPerRun` batches (or when Temporal suggests it) the run
 * continues as new with its cursor, so the history stays small however many executions
 * match. A worker kill re-runs at most the batch in flight, and that batch's retries are
 * idempotent (derived ids, replay_items primary key). A cancel stops at the next timer or
 * batch; the API has already recorded it.
 */
import { ActivityCancellationType, continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ReplayActivities } from '../activities/replays.activities';
import type { ReplayWorkflowInput } from '../replays.shared';
import { summaryLine, withSummary } from '../summaries.shared';

const { replayBatch, finishReplay } = proxyActivities<ReplayActivities>({
  // A batch is at most 100 retries, each one transaction and one Temporal start.
  startToCloseTimeout: '5 minutes',
  // The batch heartbeats per execution: a killed worker's batch is retried elsewhere this soon.
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
  // On cancel the run closes only after the batch in flight ended (it checks the replay's
  // status before each execution), so once closed, no retry of this replay starts anymore.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});

export async function replayWorkflow(input: ReplayWorkflowInput): Promise<'completed' | 'stopped'> {
  let cursor = input.cursor ?? null;
  for (let batch = 0; batch < input.batchesPerRun; batch++) {
    const result = await withSummary(replayBatch, summaryLine(`replay ${input.replayId}`, `batch of ${input.ratePerSecond}`), { replayId: input.replayId, organizationId: input.organizationId, cursor, limit: input.ratePerSecond });
    cursor = result.cursor ?? cursor;
    if (result.done) {
      return (await withSummary(finishReplay, `replay ${input.replayId} · finish`, input.replayId)) ? 'completed' : 'stopped';
    }
    await sleep(1000);
    if (workflowInfo().continueAsNewSuggested) break;
  }
  return await continueAsNew<typeof replayWorkflow>({ ...input, cursor });
}
