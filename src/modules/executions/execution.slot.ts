/**
 * Per-customer concurrency (`configuration.concurrency`, docs/executions.md "One
 * conversation per customer") for the starts recorded in a caller's ORM transaction: the
 * firings of schedule, webhook and API triggers that name a customer. It is the same rule
 * as an inbound message's, decided by the same SQL (`insertExecutionRowsSql`,
 * `insertQueuedExecutionRowsSql`, `cancelSlotHoldersCtes`) in one statement of the
 * caller's transaction:
 *
 * - the customer's row is locked first, as every message statement of the customer does:
 *   the queue's promotion (`promote_queued_execution`) locks it too, so a row queued here is
 *   never missed by the holder ending concurrently;
 * - `skip`: the execution is not inserted when a running one holds the slot (unique index);
 * - `queue`: it is inserted `queued` (at most `QUEUE_LIMIT` wait), promoted by the database
 *   when the holder ends and started by the reconciler;
 * - `replace`: the holder is cancelled in the statement; its Temporal run is cancelled by
 *   the caller after the commit (`sendTemporalCancel`).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../ids';
import { recordEvent } from '../events/outbox';
import { DEFAULT_CONCURRENCY } from '../workflows/workflow.schemas';
import { cancelSlotHoldersCtes } from './execution.recorder';
import {
  concurrencyKey,
  type ExecutionStartRow,
  executionWorkflowInput,
  insertExecutionRowsSql,
  insertQueuedExecutionRowsSql,
  type PendingExecution,
  runnableWorkflowOf,
  type StartExecutionRequest,
  workflowEventData,
} from './execution.starter';

/** What the rule did with the start: `started` (possibly replacing executions), `queued`, or `skipped` (`queue`: the queue was full). */
export type SlotOutcome = { action: 'started'; replaced: string[] } | { action: 'queued' } | { action: 'skipped'; queueFull: boolean };

const SLOT_STATEMENT = `with ${cancelSlotHoldersCtes('?', 'true')},
    ex as (
      -- After \`replaced\` (referenced): the replaced holder leaves the slot before the new row takes it.
      ${insertExecutionRowsSql('?', 'true and (select count(*) from replaced) >= 0')}
    ),
    queued as (
      ${insertQueuedExecutionRowsSql('?', 'true', '?', 'ex')}
    )
    select array(select id from ex) as started, array(select id from queued) as queued, array(select id from replaced) as replaced,
           -- A replace that could not start: the snapshot missed a newer holder; the transaction is retried.
           case when ?::boolean and not exists (select 1 from ex) then concurrency_retry() end as retry`;

/**
 * Records the execution of a customer's start in `tx` under its workflow's concurrency rule
 * (a start without a customer has no slot: `recordExecution`). Throws as `recordExecution`
 * does, before writing anything, when the workflow cannot run.
 */
export async function recordSlottedExecution(
  tx: EntityManager,
  req: StartExecutionRequest & { customerId: string },
): Promise<{ pending: PendingExecution; slot: SlotOutcome }> {
  const { wf, customerExternalId } = await runnableWorkflowOf(tx, req);
  const rule = wf.configuration!.concurrency ?? DEFAULT_CONCURRENCY;
  const now = new Date();
  const key = concurrencyKey(wf.id, req.customerId);
  const row: ExecutionStartRow = {
    id: newId('execution'), organization_id: req.organizationId, workflow_id: wf.id, revision: wf.revision, trigger_id: req.triggerId ?? null,
    customer_id: req.customerId, channel: req.channel, status: 'running', input: req.input, message_id: req.messageId ?? null, started_at: now,
    concurrency_key: key,
  };
  const rows = JSON.stringify([row]);
  const replace = rule.on_conflict === 'replace';
  await tx.execute('select 1 from customers where id = ? for no key update', [req.customerId]);
  const [result] = await tx.execute<Array<{ started: string[]; queued: string[]; replaced: string[] }>>(SLOT_STATEMENT, [
    JSON.stringify(replace ? [key] : []),
    rows,
    rows,
    JSON.stringify(rule.on_conflict === 'queue' ? [row.id] : []),
    replace,
  ]);
  const pending: PendingExecution = {
    executionId: row.id,
    triggerId: row.trigger_id,
    customerExternalId,
    workflowInput: executionWorkflowInput(
      { id: row.id, organizationId: row.organization_id, workflowId: wf.id, revision: wf.revision, channel: req.channel, customerId: req.customerId, input: req.input },
      { name: wf.name, nodes: wf.configuration!.nodes },
    ),
  };
  if (result!.started.length > 0) {
    // A queued execution's `workflow.started` is written by its promotion.
    recordEvent(tx, {
      organizationId: req.organizationId,
      type: 'workflow.started',
      data: workflowEventData({ workflowId: wf.id, id: row.id, status: 'running', durationMs: null, customerId: req.customerId, channel: req.channel }),
      occurredAt: now,
    });
    return { pending, slot: { action: 'started', replaced: result!.replaced } };
  }
  if (result!.queued.length > 0) return { pending, slot: { action: 'queued' } };
  return { pending, slot: { action: 'skipped', queueFull: rule.on_conflict === 'queue' } };
}
