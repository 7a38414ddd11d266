/**
 * Owns the writes an execution makes while it runs (called by the execution activities and
 * by cancel): steps, the waiting flag, and the final status with the workflow.* events (the
 * workflow's counters follow at commit). Outbound messages go into the transcript through
 * the owners' fragments (conversations: the message, customers: its counter, events: the
 * `message.sent` row), composed into this module's single statements. Every write is idempotent, so an
 * activity retried after a worker crash never records a step, a message or a completion
 * twice: steps are unique per (execution, node), outbound messages per dedupe key, and a
 * completion only applies to a row still `running`. Also owns the form waits (open, close)
 * that decide which execution an inbound reply belongs to.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SqlFragment, SqlRunner } from '../../db/hot-query';
import { newId } from '../../ids';
import type { EventType } from '../events/event.entity';
import { insertEventsSql, outboxEventRow, TRACED_EVENT_COLUMNS } from '../events/outbox';
import { activeTraceparent } from '../../telemetry/trace-context';
import { insertOutboundMessage } from '../conversations/conversation.writes';
import { countOutboundMessageSql } from '../customers/customer.writes';
import type { ErrorType, ExecutionStatus } from './execution.entity';

export interface ExecutionContext {
  executionId: string;
  organizationId: string;
  workflowId: string;
  channel: string;
  customerId: string | null;
  /** Set only in a dry run: the activities refuse it unless built with a dry run's sink. */
  dryRunId?: string;
  /**
   * The Temporal run calling, and the first run of its workflow id: they differ in a run an
   * operator started by resetting the execution (`reopenAfterReset`). Absent in older runs.
   */
  runId?: string;
  firstRunId?: string;
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

/** The step row (once per execution and node) as an INSERT and its bindings, for `insertStep` and `recordSentStep`. */
function stepInsert(ctx: ExecutionContext, step: StepRecord): { sql: string; bindings: unknown[] } {
  const completedAt = new Date();
  return {
    sql: `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, completed_at, duration_ms,
                                       input, output, error_type, error_message)
          values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?)
          on conflict (execution_id, node_id) do nothing returning id`,
    bindings: [
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
  };
}

export async function insertStep(em: SqlRunner, ctx: ExecutionContext, step: StepRecord): Promise<boolean> {
  const { sql, bindings } = stepInsert(ctx, step);
  return (await em.execute<Array<{ id: string }>>(sql, bindings)).length > 0;
}

/**
 * The outbound message (once per dedupe key), the customer's message counter and the
 * `message.sent` event, as the data-modifying parts of one statement (`m`: the message
 * when it was inserted; the counter and the event only then).
 */
function outboundMessageWrites(ctx: ExecutionContext & { customerId: string }, msg: { dedupeKey: string; nodeId: string; text: string; saidAt?: Date }) {
  const id = newId('message');
  const event = outboxEventRow({
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
  const message = insertOutboundMessage({
    id, organizationId: ctx.organizationId, customerId: ctx.customerId, channel: ctx.channel, text: msg.text,
    executionId: ctx.executionId, nodeId: msg.nodeId, dedupeKey: msg.dedupeKey, ...(msg.saidAt ? { createdAt: msg.saidAt } : {}),
  });
  return {
    sql: `m as (
            ${message.sql}
          ), counted as (
            ${countOutboundMessageSql('exists (select 1 from m)')}
          ), sent as (
            ${insertEventsSql('select ?, ?, ?, ?::jsonb, ?, ? where exists (select 1 from m)', TRACED_EVENT_COLUMNS)}
          )`,
    bindings: [
      ...message.bindings,
      ctx.customerId,
      event.id, event.organizationId, event.type, JSON.stringify(event.data), event.createdAt, event.traceContext,
    ],
  };
}

const hasCustomer = (ctx: ExecutionContext): ctx is ExecutionContext & { customerId: string } => ctx.customerId !== null;

/**
 * Stores an outbound message in the transcript (once per dedupe key) with its
 * `message.sent` event, in one statement. Without a customer there is no transcript to write.
 */
export async function storeOutboundMessage(
  em: SqlRunner,
  ctx: ExecutionContext,
  msg: { dedupeKey: string; nodeId: string; text: string; saidAt?: Date },
  also?: SqlFragment,
): Promise<void> {
  const writes = [...(hasCustomer(ctx) ? [outboundMessageWrites(ctx, msg)] : []), ...(also ? [alsoWrite(also)] : [])];
  if (writes.length === 0) return;
  await em.execute(`with ${writes.map((w) => w.sql).join(', ')} select 1`, writes.flatMap((w) => w.bindings));
}

/** A caller's fragment (the channel's delivery record) as a CTE of the statement. */
const alsoWrite = (f: SqlFragment): SqlFragment => ({ sql: `also_written as (${f.sql})`, bindings: f.bindings });

/** What a sent step's statement found, besides writing. */
export interface SentStepResult {
  /** False when an earlier attempt recorded the step: then `earlierOutput` is what it stored. */
  inserted: boolean;
  earlierOutput: Record<string, unknown> | undefined;
  /** The execution's status as the statement began (before its own completion, if it had one): a cancel since the send stops the next one. */
  status: ExecutionStatus | null;
}

/**
 * A sent node's message (as `storeOutboundMessage`) and its step (as `insertStep`) in ONE
 * statement: atomic without a transaction, one round trip instead of five (BEGIN, message,
 * step, event, COMMIT) on every message an execution sends. The same statement reads what
 * the next node needs to know (the step an earlier attempt stored, the execution's status),
 * so a run of message nodes reads nothing between two of them. With `completion` it also
 * finishes the execution, as `finishExecution` would (a no-op on a row no longer running).
 */
export async function recordSentStep(
  em: SqlRunner,
  ctx: ExecutionContext,
  msg: { dedupeKey: string; nodeId: string; text: string },
  step: StepRecord,
  completion?: Completion,
  also?: SqlFragment,
): Promise<SentStepResult> {
  // Without a customer there is no transcript to write: the step alone.
  const writes = hasCustomer(ctx) ? outboundMessageWrites(ctx, msg) : undefined;
  const insert = stepInsert(ctx, step);
  // The last node of an execution may also finish it here: one commit instead of two.
  const finish = completion ? finishWrites(ctx.executionId, completion) : undefined;
  // The channel's record of the send (channel_deliveries) commits with the step.
  const extra = also ? alsoWrite(also) : undefined;
  const [row] = await em.execute<Array<{ inserted: boolean; earlier: Record<string, unknown> | null; status: ExecutionStatus | null }>>(
    `with ${writes ? `${writes.sql}, ` : ''}step as (${insert.sql})${finish ? `, ${finish.sql}` : ''}${extra ? `, ${extra.sql}` : ''}
     select exists (select 1 from step) as inserted,
            (select output from execution_steps where execution_id = ? and node_id = ?) as earlier,
            (select status from executions where id = ?) as status`,
    [...(writes?.bindings ?? []), ...insert.bindings, ...(finish?.bindings ?? []), ...(extra?.bindings ?? []), ctx.executionId, step.nodeId, ctx.executionId],
  );
  return { inserted: row!.inserted, earlierOutput: row!.earlier ?? undefined, status: row!.status };
}

/** Where a run of nodes stands: the execution's status and the outputs of the steps already recorded among `nodeIds`. */
export async function loadStepsState(
  em: SqlRunner,
  executionId: string,
  nodeIds: string[],
): Promise<{ status: ExecutionStatus | null; outputs: Map<string, Record<string, unknown>> }> {
  // The ids as one JSON array: the same SQL for any number of nodes, through knex or the hot pool alike.
  const rows = await em.execute<Array<{ status: ExecutionStatus; node_id: string | null; output: Record<string, unknown> | null }>>(
    `select e.status, s.node_id, s.output from executions e
       left join execution_steps s on s.execution_id = e.id and s.node_id in (select jsonb_array_elements_text(?::jsonb))
      where e.id = ?`,
    [JSON.stringify(nodeIds), executionId],
  );
  const outputs = new Map<string, Record<string, unknown>>();
  for (const r of rows) if (r.node_id !== null && r.output !== null) outputs.set(r.node_id, r.output);
  return { status: rows[0]?.status ?? null, outputs };
}

/**
 * Form waits. A prompt opens a wait before it is sent; the first inbound message of the
 * customer on the channel claims it (`claimOpenWaitCtes`, in the inbound message's
 * statement), or the form's timeout closes it (`closeWait`). Both sides lock the execution row, so exactly one wins,
 * and a claimed reply is recorded on the message (`reply_to_wait`, unique).
 */
export type OpenWaitResult = 'open' | 'already_claimed' | 'not_running';

/**
 * The claim of a customer's newest open form wait on a channel, for the inbound message's
 * statement (inbound/message.writes.ts): the CTEs `claim` (the execution's `id`,
 * `workflow_id`, `waiting_key`; locked `for update`, so exactly one of a reply, the form
 * opening and its timeout wins) and `cleared` (the wait closed). Arguments are SQL
 * expressions of the caller's statement.
 */
export const claimOpenWaitCtes = (p: { organizationId: string; customerId: string; channel: string }) => `claim as (
      select e.id, e.workflow_id, e.waiting_key from executions e
       where e.organization_id = ${p.organizationId} and e.customer_id = ${p.customerId} and e.channel = ${p.channel}
         and e.status = 'running' and e.waiting_node_id is not null
       order by e.started_at desc limit 1 for update
    ),
    cleared as (update executions e set waiting_node_id = null, waiting_key = null from claim where e.id = claim.id)`;

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

/**
 * A reset run (docs/operators.md) takes over its execution: a `failed` execution not yet
 * taken over by this run is reopened (`running`, outcome cleared, `reset_from_run_id` the run
 * it was reset from) and its failed steps deleted, so that the nodes the new run re-runs are
 * recorded once. The workflow's counters and the rollups follow the status change (their
 * triggers subtract the old status), the node rollups the deleted steps. Idempotent: a
 * no-op once this run took over, or for an execution that did not fail (a cancelled or
 * successful execution stays so, and the reset run stops at its first node). The reopened
 * execution gives up its concurrency slot (an operator's reset is outside the rule; a newer
 * execution may hold it). One statement.
 */
export async function reopenAfterReset(em: SqlRunner, ctx: ExecutionContext & { runId: string; firstRunId: string }): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `with e as (
       update executions
          set status = 'running', output = null, error_type = null, error_message = null, completed_at = null, duration_ms = null,
              reset_from_run_id = coalesce(temporal_run_id, ?), temporal_run_id = ?,
              -- An operator's reset is outside the concurrency rule: the customer may have a newer execution running.
              concurrency_key = null
        where id = ? and status = 'failed' and temporal_run_id is distinct from ?
        returning id
     ), steps as (
       delete from execution_steps where execution_id in (select id from e) and status = 'failed'
     )
     select id from e`,
    [ctx.firstRunId, ctx.runId, ctx.executionId, ctx.runId],
  );
  return rows.length > 0;
}

export interface Completion {
  status: Exclude<ExecutionStatus, 'running'>;
  output: Record<string, unknown> | null;
  errorType?: ErrorType;
  errorMessage?: string;
  /**
   * Finished by its Temporal run, which proves the run was started: an unconfirmed start
   * (the API's start cut off at its timeout, a batched stamp lost with its process) is
   * stamped here, as the reconciler would have, since it only looks at running executions.
   */
  byRun?: boolean;
}

/**
 * Finishes a running execution: final status, duration and the workflow.completed (and,
 * for a failure, workflow.failed) events, in ONE statement (atomic on its own, one round
 * trip instead of four when the caller has no transaction); the workflow's success/failure
 * counters follow at its commit (a deferred trigger, Migration20261128000100_deferred_counters).
 * A no-op (returns false) when the execution already finished.
 */
export async function finishExecution(em: SqlRunner, executionId: string, c: Completion): Promise<boolean> {
  const finish = finishWrites(executionId, c);
  const rows = await em.execute<Array<{ id: string }>>(`with ${finish.sql} select id from e`, finish.bindings);
  return rows.length > 0;
}

/** `finishExecution`'s data-modifying parts (`e`: the execution when it was still running; its events), for one statement with others. */
function finishWrites(executionId: string, c: Completion): { sql: string; bindings: unknown[] } {
  // The event data is `workflowEventData` (execution.starter.ts) built from the updated row,
  // plus the error fields for workflow.failed.
  const traceparent = activeTraceparent();
  return {
    // The customer's row is locked before the execution's (`slot_order`): the order of a
    // message statement, so the promotion of a queued execution (`promote_queued_execution`,
    // which locks it too) cannot deadlock with a message of the same customer.
    sql: `slot_order as (
       select 1 from customers where id = (select customer_id from executions where id = ? and concurrency_key is not null) for no key update
     ), e as (
       update executions
          set status = ?, output = ?::jsonb, error_type = ?, error_message = ?, waiting_node_id = null, waiting_key = null,
              completed_at = clock_timestamp(),
              temporal_started_at = case when ? then coalesce(temporal_started_at, clock_timestamp()) else temporal_started_at end,
              duration_ms = greatest(0, round(extract(epoch from (clock_timestamp() - started_at)) * 1000))::int
        -- A queued execution (on_conflict "queue") may be cancelled before it starts.
        where id = ? and (status = 'running' or (status = 'queued' and ? = 'cancelled')) and (select count(*) from slot_order) >= 0
        returning id, organization_id, completed_at,
                  jsonb_build_object('workflow_id', workflow_id, 'execution_id', id, 'status', status, 'duration_ms', coalesce(duration_ms, 0),
                                     'customer_id', customer_id, 'channel', channel) as data
     ), events as (
       ${insertEventsSql(
         `select ?, organization_id, ?, data, completed_at, ?::text from e
          union all
          select ?, organization_id, ?, data || ?::jsonb, completed_at, ?::text from e where ? = 'failed'`,
         TRACED_EVENT_COLUMNS,
       )}
     )`,
    bindings: [
      executionId,
      c.status,
      c.output === null ? null : JSON.stringify(c.output),
      c.errorType ?? null,
      c.errorMessage?.slice(0, 2000) ?? null,
      c.byRun === true,
      executionId,
      c.status,
      newId('event'),
      'workflow.completed' satisfies EventType,
      traceparent,
      newId('event'),
      'workflow.failed' satisfies EventType,
      JSON.stringify({ error_type: c.errorType ?? null, error_message: c.errorMessage ?? null }),
      traceparent,
      c.status,
    ],
  };
}

/**
 * The cancel of the executions holding the slots (`concurrency_key`s, a JSON array) that a
 * message replaces (`on_conflict: "replace"`), for the message's statement
 * (inbound/message.writes.ts), when `when` holds: what `finishExecution` writes for a cancel
 * (`cancelled`, `next_action: "cancelled"`, the `workflow.completed` event), as the CTEs
 * `replaced` (the ids) and `replaced_events`. The caller sends their Temporal cancels after
 * the commit (`sendTemporalCancel`; the reconciler re-sends a lost one).
 */
export const cancelSlotHoldersCtes = (keysJson: string, when: string) => `replaced as (
       update executions
          set status = 'cancelled', output = coalesce(output, '{}'::jsonb) || '{"next_action": "cancelled"}'::jsonb,
              waiting_node_id = null, waiting_key = null, completed_at = clock_timestamp(),
              duration_ms = greatest(0, round(extract(epoch from (clock_timestamp() - started_at)) * 1000))::int
        where concurrency_key in (select jsonb_array_elements_text(${keysJson}::jsonb)) and status = 'running' and ${when}
        returning id, organization_id, completed_at,
                  jsonb_build_object('workflow_id', workflow_id, 'execution_id', id, 'status', status, 'duration_ms', coalesce(duration_ms, 0),
                                     'customer_id', customer_id, 'channel', channel) as data
    ),
    replaced_events as (
      ${insertEventsSql(`select 'evt_' || substr(md5(random()::text || r.id), 1, 20), r.organization_id, 'workflow.completed', r.data, r.completed_at from replaced r`)}
    )`;
