/**
 * Owns the Temporal names of webhook recoveries (POST /v1/webhooks/{id}/recover): the
 * workflow type and ids, and the I/O shared by the API, the workflow and its activities.
 * Imported by workflow code: nothing but plain types.
 */
export const WEBHOOK_RECOVERY_WORKFLOW_TYPE = 'webhookRecoveryWorkflow';

/** One workflow per recovery. */
export const webhookRecoveryWorkflowId = (recoveryId: string) => `webhook-recovery:${recoveryId}`;

/**
 * The delivery of one event that recoveries start: one id per (event, webhook) whichever
 * recovery starts it, so a second recovery of the same window finds the first's delivery
 * (running, or closed delivered) and does not send again; only a delivery that closed
 * failed may be started again (ALLOW_DUPLICATE_FAILED_ONLY).
 */
export const recoveredDeliveryWorkflowId = (eventId: string, webhookId: string) => `webhook-recovered:${eventId}:${webhookId}`;

export interface WebhookRecoveryWorkflowInput {
  recoveryId: string;
  organizationId: string;
  /** Deliveries started per second, at most (WEBHOOK_RECOVERY_RATE_PER_SECOND at the start). */
  ratePerSecond: number;
  /** Batches per run before continue-as-new. */
  batchesPerRun: number;
}

export interface WebhookRecoveryBatchInput {
  recoveryId: string;
  organizationId: string;
  limit: number;
}

export interface WebhookRecoveryBatchResult {
  processed: number;
  /** No event left, or the recovery is gone (its webhook was deleted). */
  done: boolean;
}
