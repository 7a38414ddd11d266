/**
 * Owns `webhookRecoveryWorkflow`: one recovery of a webhook's missed events. Each batch is
 * one activity that starts up to `ratePerSecond` deliveries from the recovery's snapshot; a
 * one-second timer between full batches holds the rate. After `batchesPerRun` batches (or
 * when Temporal suggests it) the run continues as new: the snapshot's outcomes are the
 * cursor, so nothing needs carrying over. A killed worker's batch is retried elsewhere and
 * starts no delivery twice (webhook-recovery.runner.ts).
 */
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { WebhookRecoveryActivities } from '../activities/webhook-recoveries.activities';
import type { WebhookRecoveryWorkflowInput } from '../webhook-recoveries.shared';
import { summaryLine, withSummary } from '../summaries.shared';

const { recoveryBatch, finishRecovery } = proxyActivities<WebhookRecoveryActivities>({
  // A batch is at most WEBHOOK_RECOVERY_RATE_PER_SECOND (≤ 1000) Temporal starts.
  startToCloseTimeout: '5 minutes',
  // The batch heartbeats per event: a killed worker's batch is retried elsewhere this soon.
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function webhookRecoveryWorkflow(input: WebhookRecoveryWorkflowInput): Promise<'completed' | 'stopped'> {
  for (let batch = 0; batch < input.batchesPerRun; batch++) {
    const result = await withSummary(recoveryBatch, summaryLine(`webhook recovery ${input.recoveryId}`, `batch of ${input.ratePerSecond}`), {
      recoveryId: input.recoveryId,
      organizationId: input.organizationId,
      limit: input.ratePerSecond,
    });
    if (result.done) {
      return (await withSummary(finishRecovery, `webhook recovery ${input.recoveryId} · finish`, input.recoveryId)) ? 'completed' : 'stopped';
    }
    await sleep(1000);
    if (workflowInfo().continueAsNewSuggested) break;
  }
  return await continueAsNew<typeof webhookRecoveryWorkflow>(input);
}
