/**
 * Owns one batch of a webhook recovery, run by the recovery workflow's activity: the next
 * `limit` events of its snapshot without an outcome, each given one delivery workflow (the
 * ordinary delivery: signed, retried under the webhook's retry_policy, throttled by its
 * rate_limit, its attempts continuing the event's count).
 *
 * Each event is delivered once, across crashes and across recoveries:
 * - the delivery's workflow id is derived from (event, webhook) alone
 *   (`recoveredDeliveryWorkflowId`) and carries the starting recovery in its memo. A batch
 *   re-run after a crash finds its own delivery (memo) and records it as started, even if
 *   that delivery has meanwhile closed;
 * - another recovery's delivery of the event, running or delivered, refuses the start
 *   (conflict FAIL, reuse ALLOW_DUPLICATE_FAILED_ONLY): the event is `skipped`. Only a
 *   delivery that closed failed is started again.
 * - the outcome row is written after the start; its primary key (recovery_id, event_id)
 *   keeps every event counted once.
 */
import { deliveryTimingOf } from '../../config';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { failpoint } from '../../failpoints';
import type { Services } from '../../services';
import { webhookDeliveryMetadata } from '../../temporal-metadata';
import { newDeliveryStart, WEBHOOK_DELIVERY_WORKFLOW_TYPE } from '../../../temporal/webhooks.shared';
import { recoveredDeliveryWorkflowId, type WebhookRecoveryBatchInput, type WebhookRecoveryBatchResult } from '../../../temporal/webhook-recoveries.shared';

interface BatchRow {
  event_id: string;
  event_type: string;
  /** Attempts of this event to this webhook so far: the recovered delivery continues the count. */
  attempts: number;
}

interface RecoveryRow {
  webhook_id: string;
  max_retries: number;
  retry_delay_ms: number;
}

type Outcome = 'started' | 'skipped';

/** Whether the delivery `workflowId` exists and was started by `recoveryId`. */
async function startedByThisRecovery(services: Services, workflowId: string, recoveryId: string): Promise<boolean> {
  try {
    const d = await services.temporal.client.workflow.getHandle(workflowId).describe();
    return d.memo?.recoveryId === recoveryId;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

async function deliverOnce(services: Services, recoveryId: string, organizationId: string, hook: RecoveryRow, row: BatchRow): Promise<Outcome> {
  const workflowId = recoveredDeliveryWorkflowId(row.event_id, hook.webhook_id);
  // Ours from before a crash: maybe closed already, failed even, so a start could succeed again.
  if (await startedByThisRecovery(services, workflowId, recoveryId)) return 'started';
  try {
    await services.temporal.client.workflow.start(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
      taskQueue: services.config.TEMPORAL_TASK_QUEUE,
      workflowId,
      ...newDeliveryStart({
        eventId: row.event_id,
        webhookId: hook.webhook_id,
        organizationId,
        retryPolicy: { max_retries: hook.max_retries, retry_delay_ms: hook.retry_delay_ms },
        ...deliveryTimingOf(services.config),
        previousAttempts: row.attempts,
      }),
      memo: { recoveryId },
      workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
      workflowIdConflictPolicy: 'FAIL',
      ...webhookDeliveryMetadata(services.config, { eventId: row.event_id, eventType: row.event_type, webhookId: hook.webhook_id, organizationId, redelivery: true }),
    });
    return 'started';
  } catch (err) {
    // Another recovery's delivery of this event is running or has delivered it.
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'skipped';
    throw err;
  }
}

/** `heartbeat` is called before each event, so Temporal notices a killed worker within the heartbeat timeout. */
export async function runRecoveryBatch(services: Services, input: WebhookRecoveryBatchInput, heartbeat: () => void = () => {}): Promise<WebhookRecoveryBatchResult> {
  const em = services.orm.em.fork() as EntityManager;
  const [hook] = await em.execute<RecoveryRow[]>(
    `select r.webhook_id, w.max_retries, w.retry_delay_ms
       from webhook_recoveries r join webhooks w on w.id = r.webhook_id
      where r.id = ? and r.organization_id = ? and r.status = 'running'`,
    [input.recoveryId, input.organizationId],
  );
  if (!hook) return { processed: 0, done: true };
  const rows = await em.execute<BatchRow[]>(
    `select i.event_id, e.type as event_type,
            coalesce((select max(l.attempt) from webhook_logs l where l.webhook_id = ? and l.event_id = i.event_id), 0)::int as attempts
       from webhook_recovery_items i join events e on e.id = i.event_id
      where i.recovery_id = ? and i.outcome is null
      order by i.event_created_at, i.event_id limit ?`,
    [hook.webhook_id, input.recoveryId, input.limit],
  );
  for (const row of rows) {
    heartbeat();
    const outcome = await deliverOnce(services, input.recoveryId, input.organizationId, hook, row);
    failpoint(services.config, 'webhook_recovery.after_start');
    await em.execute(
      `update webhook_recovery_items set outcome = ?, delivery_id = ? where recovery_id = ? and event_id = ? and outcome is null`,
      [outcome, outcome === 'started' ? recoveredDeliveryWorkflowId(row.event_id, hook.webhook_id) : null, input.recoveryId, row.event_id],
    );
  }
  // Events purged meanwhile (EVENT_RETENTION_DAYS) have nothing left to send.
  if (rows.length < input.limit) {
    await em.execute(
      `update webhook_recovery_items i set outcome = 'skipped' where i.recovery_id = ? and i.outcome is null
          and not exists (select 1 from events e where e.id = i.event_id)`,
      [input.recoveryId],
    );
  }
  return { processed: rows.length, done: rows.length < input.limit };
}

/** Marks the recovery completed once every event has its outcome; false when it no longer exists. */
export async function finishRecovery(services: Services, recoveryId: string): Promise<boolean> {
  const em = services.orm.em.fork() as EntityManager;
  const res = await em.execute(`update webhook_recoveries set status = 'completed', completed_at = now() where id = ? and status = 'running' returning id`, [recoveryId]);
  return res.length > 0;
}
