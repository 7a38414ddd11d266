/**
 * Owns the writes of human handoffs (`customer_handoffs`, docs/handoff.md; their reads are
 * customers/handoff.reads.ts): a customer handed to a person,
 * whose inbound messages are then recorded but start and resume nothing
 * (inbound/handoff-intake.ts), until DELETE or `until` passes.
 *
 * Starting one, in ONE transaction: the customer's row is locked (so two POSTs, or a POST and
 * an automatic handoff, are ordered), the handoff is inserted (or the active one moved), its
 * `conversation.handoff_started` event is recorded, and every execution of the customer
 * waiting on a form is finished `cancelled` with `output.next_action: "handed_off"` (the
 * outcome; the contract's statuses stay as they are: docs/decisions.md). The expiry timer
 * (`handoffExpiryWorkflow`) is started before the commit: if the commit fails, the timer wakes
 * to a handoff that does not exist and ends nothing, so there is no dual write to repair. After
 * the commit the closed executions' Temporal runs are cancelled (the reconciler re-sends a
 * lost cancel, as for any cancel). It sits above executions, whose owner writes it calls
 * (finishExecution, sendTemporalCancel), and above customers, whose rows it locks.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { invalid, notFound, unavailable } from '../../errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { boundedTemporalCall } from '../../temporal-calls';
import { HANDOFF_EXPIRY_WORKFLOW_TYPE, type HandoffExpiryInput, handoffExpiryWorkflowId } from '../../../temporal/handoffs.shared';
import { recordEvent } from '../events/outbox';
import { sendTemporalCancel } from '../executions/execution.canceller';
import { finishExecution } from '../executions/execution.recorder';
import { customerNotFound } from '../customers/customer.service';
import { type HandoffRow, type HandoffView, handoffView, iso } from '../customers/handoff.reads';
import { organizationPriority } from '../../../temporal/fairness.shared';

export const HANDOFF_MAX_MS = 7 * 24 * 3600 * 1000;
/** A handoff without `until` lasts a day: none silences a customer for good by being forgotten. */
export const HANDOFF_DEFAULT_MS = 24 * 3600 * 1000;
/** The reason of an automatic handoff (an ai_response node with `fallback: "handoff"`). */
export const LOW_CONFIDENCE = 'low_confidence';
/** The outcome of an execution a handoff ended (`output.next_action`), and the reason its form closed. */
export const HANDED_OFF = 'handed_off';

/** The `conversation.handoff_*` event of a handoff row, as the outbox stores it. */
function recordHandoffEvent(em: EntityManager, h: HandoffRow, externalId: string, type: 'conversation.handoff_started' | 'conversation.handoff_ended') {
  recordEvent(em, {
    organizationId: h.organization_id,
    type,
    data: {
      handoff_id: h.id,
      customer_id: h.customer_id,
      external_id: externalId,
      channel: h.channel,
      reason: h.reason,
      since: iso(h.started_at),
      until: iso(h.until),
      execution_id: h.execution_id,
      ...(h.ended_at ? { ended_at: iso(h.ended_at), end_reason: h.end_reason } : {}),
    },
  });
}

export interface StartHandoffInput {
  organizationId: string;
  customerId: string;
  reason?: string | null;
  until?: Date;
  channel?: string;
  /** The execution handing the customer off (automatic handoff): it is not closed here, it ends itself. */
  executionId?: string;
}

/**
 * Starts a handoff, or moves the one in force (`until`, and `reason` / `channel` when given):
 * `created` says which. An automatic handoff (`executionId`) leaves one in force as it is.
 */
export async function startHandoff(services: Services, input: StartHandoffInput): Promise<{ handoff: HandoffView; created: boolean }> {
  const now = Date.now();
  const until = input.until ?? new Date(now + HANDOFF_DEFAULT_MS);
  if (until.getTime() <= now) throw invalid('until must be in the future', 'until');
  if (until.getTime() > now + HANDOFF_MAX_MS) throw invalid('until must be at most 7 days away', 'until');
  const em = services.orm.em.fork() as EntityManager;
  const done = await em.transactional(async (tx) => {
    const [customer] = await tx.execute<Array<{ channel: string; external_id: string }>>(
      'select channel, external_id from customers where id = ? and organization_id = ? for update',
      [input.customerId, input.organizationId],
    );
    if (!customer) throw customerNotFound();
    if (input.channel !== undefined && input.channel !== customer.channel) {
      throw invalid(`channel must be the customer's channel (${customer.channel})`, 'channel');
    }
    // One whose timer is late is over: ended as expired, so the new one can start.
    const stale = await tx.execute<HandoffRow[]>(
      `update customer_handoffs set ended_at = until, end_reason = 'expired' where customer_id = ? and ended_at is null and until <= now() returning *`,
      [input.customerId],
    );
    for (const h of stale) recordHandoffEvent(tx as EntityManager, h, customer.external_id, 'conversation.handoff_ended');
    const [active] = await tx.execute<HandoffRow[]>('select * from customer_handoffs where customer_id = ? and ended_at is null', [input.customerId]);
    let row: HandoffRow;
    let created = false;
    if (active && input.executionId !== undefined) {
      row = active;
    } else if (active) {
      [row] = (await tx.execute<HandoffRow[]>(
        'update customer_handoffs set until = ?, reason = coalesce(?, reason) where id = ? returning *',
        [until, input.reason ?? null, active.id],
      )) as [HandoffRow];
    } else {
      created = true;
      [row] = (await tx.execute<HandoffRow[]>(
        `insert into customer_handoffs (id, organization_id, customer_id, channel, reason, execution_id, until)
         values (?, ?, ?, ?, ?, ?, ?) returning *`,
        [newId('handoff'), input.organizationId, input.customerId, customer.channel, input.reason ?? null, input.executionId ?? null, until],
      )) as [HandoffRow];
      recordHandoffEvent(tx as EntityManager, row, customer.external_id, 'conversation.handoff_started');
    }
    const closed = created ? await closeWaitingForms(tx as EntityManager, input.customerId, input.executionId) : [];
    await tx.flush();
    if (row !== active) await startExpiryTimer(services, { organizationId: input.organizationId, handoffId: row.id, untilMs: new Date(row.until).getTime() });
    // A moved `until`: the old timer would wake to nothing; it is cancelled after the commit, for tidiness.
    const replaced = active && row !== active && new Date(active.until).getTime() !== new Date(row.until).getTime() ? active : undefined;
    return { row, created, closed, replaced };
  });
  for (const id of done.closed) await sendTemporalCancel(services, id);
  if (done.replaced) await cancelExpiryTimer(services, done.replaced);
  return { handoff: handoffView(done.row), created: done.created };
}

/**
 * Finishes the customer's executions waiting on a form: `cancelled`, outcome `handed_off`
 * (their form closed for that reason). Returns their ids (their runs are cancelled after the commit).
 */
async function closeWaitingForms(tx: EntityManager, customerId: string, except: string | undefined): Promise<string[]> {
  const waiting = await tx.execute<Array<{ id: string; output: Record<string, unknown> | null }>>(
    `select id, output from executions where customer_id = ? and status = 'running' and waiting_node_id is not null and id <> ? for update`,
    [customerId, except ?? ''],
  );
  const closed: string[] = [];
  for (const e of waiting) {
    const output = { ...(e.output ?? {}), next_action: HANDED_OFF, closed_reason: HANDED_OFF };
    if (await finishExecution(tx, e.id, { status: 'cancelled', output })) closed.push(e.id);
  }
  return closed;
}

async function startExpiryTimer(services: Services, input: HandoffExpiryInput): Promise<void> {
  const started = await boundedTemporalCall(
    services,
    () =>
      services.temporal.client.workflow.start(HANDOFF_EXPIRY_WORKFLOW_TYPE, {
        taskQueue: services.config.TEMPORAL_TASK_QUEUE,
        workflowId: handoffExpiryWorkflowId(input.handoffId, input.untilMs),
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        priority: organizationPriority(input.organizationId),
      }),
    (err) => (err as Error).name === 'WorkflowExecutionAlreadyStartedError',
    undefined,
    { handoff_id: input.handoffId },
  );
  // Without its timer a handoff would never end by itself: nothing is committed.
  if (!started) throw unavailable('SERVICE_UNAVAILABLE', 'The scheduler did not answer; the handoff was not started', 5);
}

/** DELETE: ends the customer's handoff (`deleted`); 404 when the customer has none. */
export async function endHandoff(services: Services, organizationId: string, customerId: string): Promise<void> {
  const em = services.orm.em.fork() as EntityManager;
  const ended = await em.transactional(async (tx) => {
    const [customer] = await tx.execute<Array<{ external_id: string }>>('select external_id from customers where id = ? and organization_id = ?', [
      customerId,
      organizationId,
    ]);
    if (!customer) throw customerNotFound();
    const [row] = await tx.execute<HandoffRow[]>(
      `update customer_handoffs set ended_at = now(), end_reason = case when until <= now() then 'expired' else 'deleted' end
        where customer_id = ? and ended_at is null returning *`,
      [customerId],
    );
    if (!row) throw notFound('HANDOFF_NOT_FOUND', 'Handoff');
    recordHandoffEvent(tx as EntityManager, row, customer.external_id, 'conversation.handoff_ended');
    await tx.flush();
    return row;
  });
  await cancelExpiryTimer(services, ended);
}

/** Tidiness only: a timer left running wakes to an ended or moved handoff and ends nothing. */
async function cancelExpiryTimer(services: Services, h: HandoffRow): Promise<void> {
  await boundedTemporalCall(
    services,
    () => services.temporal.client.workflow.getHandle(handoffExpiryWorkflowId(h.id, new Date(h.until).getTime())).cancel(),
    (err) => err instanceof WorkflowNotFoundError,
  );
}

/** The timer's end: the handoff ends (`expired`) if it is still in force with this `until` or an earlier one. */
export async function expireHandoff(services: Services, input: HandoffExpiryInput): Promise<boolean> {
  const em = services.orm.em.fork() as EntityManager;
  return await em.transactional(async (tx) => {
    const [row] = await tx.execute<HandoffRow[]>(
      `update customer_handoffs set ended_at = greatest(until, now()), end_reason = 'expired'
        where id = ? and organization_id = ? and ended_at is null and until <= ? returning *`,
      [input.handoffId, input.organizationId, new Date(input.untilMs)],
    );
    if (!row) return false;
    const [customer] = await tx.execute<Array<{ external_id: string }>>('select external_id from customers where id = ?', [row.customer_id]);
    recordHandoffEvent(tx as EntityManager, row, customer?.external_id ?? '', 'conversation.handoff_ended');
    await tx.flush();
    return true;
  });
}
