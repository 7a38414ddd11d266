/** Owns the webhook recovery workflow's activities: thin wrappers over src/modules/webhooks/webhook-recovery.runner.ts. */
import { Context } from '@temporalio/activity';
import type { Services } from '../../src/services';
import { finishRecovery, runRecoveryBatch } from '../../src/modules/webhooks/webhook-recovery.runner';
import type { WebhookRecoveryBatchInput, WebhookRecoveryBatchResult } from '../webhook-recoveries.shared';

export function createWebhookRecoveryActivities(deps: { services: Services }) {
  return {
    async recoveryBatch(input: WebhookRecoveryBatchInput): Promise<WebhookRecoveryBatchResult> {
      return await runRecoveryBatch(deps.services, input, () => Context.current().heartbeat());
    },
    async finishRecovery(recoveryId: string): Promise<boolean> {
      return await finishRecovery(deps.services, recoveryId);
    },
  };
}

export type WebhookRecoveryActivities = ReturnType<typeof createWebhookRecoveryActivities>;
