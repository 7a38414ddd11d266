/**
 * Owns the writes an execution makes while it runs (called by the execution activities and
 * by cancel): outbound messages into the transcript, steps, the waiting flag, and the final
 * status with the workflow counters and workflow.* events. Every write is idempotent, so an
 * activity retried after a worker crash never records a step, a message or a completion
 * twice: steps are unique per (execution, node), outbound messages per dedupe key, and a
 * completion only applies to a row still `running`. Also owns the form waits (open, close)
 * that decide which execution an inbound reply belongs to.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../ids';
import { recordEvent } from '../events/outbox';
import type { ErrorType, ExecutionStatus } from './execution.entity';
import { workflowEventData } from './execution.starter';

export interface ExecutionContext {
  executionId: string;
  organizationId: string;
  workflowId: string;
  channel: string;
  customerId: string | null;
  /** Set only in a dry run: the activities refuse it unless built with a dry run's sink. */
  dryRunId?: string;
}

export interface StepRecord {
  nodeId: string;
  type: string;
  status: 'completed' | 'failed';
  startedAt: Date;
  input: Record<string, unknown>;
  output: Record<string, unknown>;
  errorType?: string;
  errorMessage?: string;
}

/** The stored output of a step already recorded, or undefined. */
export async function findStepOutput(em: EntityManager, executionId: string, nodeId: string): Promise<Record<string, unknown> | undefined> {
  const [row] = await em.execute<Array<{ output: Record<string, unknown> }>>(
    'select output from execution_steps where execution_id = ? and node_id = ?',
    [executionId, nodeId],
  );
  return row?.output;
}

export async function insertStep(em: EntityManager, ctx: ExecutionContext, step: StepRecord): Promise<boolean> {
  const completedAt = new Date();
  const rows = await em.execute<Array<{ id: string }>>(
    `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, completed_at, duration_ms,
                                  input, output, error_type, error_message)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?)
     on conflict (execution_id, node_id) do nothing returning id`,
    [
      newId('executionStep'),
      ctx.executionId,
      ctx.organizationId,
      step.nodeId,
      step.type,
      step.status,
      step.startedAt,
      completedAt,
      Math.max(0, completedAt.getTime() - step.startedAt.getTime()),
      JSON.stringify(step.input),
      JSON.stringify(step.output),
      step.errorType ?? null,
      step.errorMessage ?? null,
    ],
  );
  return rows.length > 0;
}

/**
 * Stores an outbound message in the transcript (once per dedupe key) with its
 * `message.sent` event. Without a customer there is no transcript to write.
 */
export async function storeOutboundMessage(
  em: EntityManager,
  ctx: ExecutionContext,
  msg: { dedupeKey: string; nodeId: string; text: string },
): Promise<string | undefined> {
  if (!ctx.customerId) return undefined;
  const id = newId('message');
  // The message and the customer's counter in one statement: one round trip per step less.
  const rows = await em.execute<Array<{ id: string; created_at: Date }>>(
    `with m as (
       insert into messages (id, organization_id, customer_id, channel, direction, text, execution_id, node_id, dedupe_key)
       values (?, ?, ?, ?, 'outbound', ?, ?, ?, ?)
       on conflict (dedupe_key) do nothing returning id, created_at
     ), counted as (
       update customers set message_count = message_count + 1 where id = ? and exists (select 1 from m)
     )
     select id, created_at from m`,
    [id, ctx.organizationId, ctx.customerId, ctx.channel, msg.text, ctx.executionId, msg.nodeId, msg.dedupeKey, ctx.customerId],
  );
  if (rows.length === 0) return undefined;
  recordEvent(em, {
    organizationId: ctx.organizationId,
    type: 'message.sent',
    data: {
      message_id: id,
      customer_id: ctx.customerId,
      channel: ctx.channel,
      text: msg.text,
      workflow_id: ctx.workflowId,
      execution_id: ctx.executionId,
      node_id: msg.nodeId,
    },
  });
  return id;
}

/** Where a node stands: the execution's status and the node's step output if one is recorded. */
export async function loadNodeState(
  em: EntityManager,
  executionId: string,
  nodeId: string,
): Promise<{ status: ExecutionStatus | null; output: Record<string, unknown> | undefined }> {
  const [row] = await em.execute<Array<{ status: ExecutionStatus; output: Record<string, unknown> | null }>>(
    `select e.status, s.output from executions e
       left join execution_steps s on s.execution_id = e.id and s.node_id = ?
      where e.id = ?`,
    [nodeId, executionId],
  );
  return { status: row?.status ?? null, output: row?.output ?? undefined };
}

/**
 * Form waits. A prompt opens a wait before it is sent; the first inbound message of the
 * customer on the channel claims it (reply-delivery.ts: `claimWait`), or the form's
 * timeout closes it (`closeWait`). Both sides lock the execution row, so exactly one wins,
 * and a claimed reply is recorded on the message (`reply_to_wait`, unique).
 */
export type OpenWaitResult = 'open' | 'already_claimed' | 'not_running';

/**
 * Opens the wait `waitKey` (output `wait_for_input`). Idempotent for an activity retry:
 * a wait that a reply already claimed is not reopened, so it cannot take a second reply.
 */
export async function openWait(em: EntityManager, ctx: ExecutionContext, w: { nodeId: string; field: string; waitKey: string }): Promise<OpenWaitResult> {
  const [exec] = await em.execute<Array<{ status: ExecutionStatus }>>('select status from executions where id = ? for update', [ctx.executionId]);
  if (exec?.status !== 'running') return 'not_running';
  // Read after the row lock: a claim that held it has committed and is visible here.
  const [claimed] = await em.execute<Array<{ id: string }>>('select id from messages where reply_to_wait = ?', [w.waitKey]);
  if (claimed) return 'already_claimed';
  await em.execute(
    `update executions set waiting_node_id = ?, waiting_key = ?, output = ?::jsonb where id = ?`,
    [w.nodeId, w.waitKey, JSON.stringify({ response: null, next_action: 'wait_for_input', node_id: w.nodeId, field: w.field }), ctx.executionId],
  );
  return 'open';
}

export type CloseWaitResult = { state: 'claimed'; reply: { messageId: string; text: string } } | { state: 'closed' } | { state: 'not_running' };

/**
 * Closes the wait `waitKey` after the form's timeout, unless a reply claimed it first: then
 * that reply is returned so the form takes it even if its signal has not arrived (the
 * reply is never swallowed).
 */
export async function closeWait(em: EntityManager, ctx: ExecutionContext, waitKey: string): Promise<CloseWaitResult> {
  const [exec] = await em.execute<Array<{ status: ExecutionStatus }>>('select status from executions where id = ? for update', [ctx.executionId]);
  const [claimed] = await em.execute<Array<{ id: string; text: string }>>('select id, text from messages where reply_to_wait = ?', [waitKey]);
  if (claimed) return { state: 'claimed', reply: { messageId: claimed.id, text: claimed.text } };
  if (exec?.status !== 'running') return { state: 'not_running' };
  await em.execute('update executions set waiting_node_id = null, waiting_key = null where id = ? and waiting_key = ?', [ctx.executionId, waitKey]);
  return { state: 'closed' };
}

/** The form node is done: nothing is awaited any more. */
export async function clearWaiting(em: EntityManager, ctx: ExecutionContext): Promise<void> {
  await em.execute(
    `update executions set waiting_node_id = null, waiting_key = null, output = null where id = ? and status = 'running'`,
    [ctx.executionId],
  );
}

export interface Completion {
  status: Exclude<ExecutionStatus, 'running'>;
  output: Record<string, unknown> | null;
  errorType?: ErrorType;
  errorMessage?: string;
}

/**
 * Finishes a running execution: final status, duration and the workflow.completed (and,
 * for a failure, workflow.failed) events, in the caller's transaction; the workflow's
 * success/failure counters follow at its commit (a deferred trigger,
 * Migration20261128000100_deferred_counters). A no-op (returns false) when the execution
 * already finished.
 */
export async function finishExecution(em: EntityManager, executionId: string, c: Completion): Promise<boolean> {
  const [row] = await em.execute<
    Array<{ organization_id: string; workflow_id: string; customer_id: string | null; channel: string; duration_ms: number; completed_at: Date }>
  >(
    `update executions
        set status = ?, output = ?::jsonb, error_type = ?, error_message = ?, waiting_node_id = null, waiting_key = null,
            completed_at = clock_timestamp(),
            duration_ms = greatest(0, round(extract(epoch from (clock_timestamp() - started_at)) * 1000))::int
      where id = ? and status = 'running'
      returning organization_id, workflow_id, customer_id, channel, duration_ms, completed_at`,
    [c.status, c.output === null ? null : JSON.stringify(c.output), c.errorType ?? null, c.errorMessage?.slice(0, 2000) ?? null, executionId],
  );
  if (!row) return false;
  const data = workflowEventData({
    workflowId: row.workflow_id,
    id: executionId,
    status: c.status,
    durationMs: row.duration_ms,
    customerId: row.customer_id,
    channel: row.channel,
  });
  recordEvent(em, { organizationId: row.organization_id, type: 'workflow.completed', data, occurredAt: row.completed_at });
  if (c.status === 'failed') {
    recordEvent(em, {
      organizationId: row.organization_id,
      type: 'workflow.failed',
      data: { ...data, error_type: c.errorType ?? null, error_message: c.errorMessage ?? null },
      occurredAt: row.completed_at,
    });
  }
  return true;
}
