/**
 * Owns starting an execution, the dual write between PostgreSQL and Temporal:
 *
 * 1. `recordExecution(em, req)` adds the execution row (status `running`,
 *    `temporal_started_at` null) and the `workflow.started` event to the caller's
 *    transaction; the workflow's `execution_count` follows at its commit (a deferred
 *    trigger, Migration20261128000100_deferred_counters).
 * 2. After the commit, `dispatchExecution` starts the Temporal workflow whose id is the
 *    execution id and stamps `temporal_started_at` (inbound messages' starts in batches,
 *    `StartStamps`), as the durable start kind `EXECUTION_START`
 *    (starts/durable-start.ts: reuse policy REJECT_DUPLICATE, conflict policy USE_EXISTING,
 *    so a second start of the same id never creates a second run).
 *
 * If the process dies between 1 and 2, or Temporal is unreachable, the row stays
 * unstamped and the worker's reconciler (execution.reconciler.ts) starts it later; the
 * workflow-id policies make that start exactly once even when both race.
 */
import type { HeldClaim } from '../../http/idempotency';
import { infraRetryMsOf } from '../../config';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SearchAttributePair } from '@temporalio/common';
import { conflict, notFound } from '../../errors';
import { failpoint } from '../../failpoints';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { Workflow } from '../workflows/workflow.entity';
import { SearchAttributeKeys } from '../../../temporal/shared';
import {
  EXECUTION_WORKFLOW_TYPE,
  EXECUTION_WORKFLOW_VERSION,
  executionWorkflowId,
  type ExecutionNodeSpec,
  type ExecutionWorkflowInput,
} from '../../../temporal/executions.shared';
import { Execution } from './execution.entity';
import type { StartStamps } from './start-stamps';
import { Customer } from '../customers/customer.entity';
import { executionMetadata } from '../../temporal-metadata';
import { organizationPriority } from '../../../temporal/fairness.shared';
import { transactionalRetrying } from '../../db/transaction';
import { claimOneSql, dispatchStart, releaseStartClaim, START_CLAIM_LEASE_MS, type StartKind } from '../starts/durable-start';
import { RECONCILE_TEMPORAL_TIMEOUT_MS } from '../../temporal-calls';
import { type HotPool, hotQuery } from '../../db/hot-query';

export interface StartExecutionRequest {
  organizationId: string;
  workflowId: string;
  triggerId?: string;
  customerId?: string;
  channel: string;
  input: Record<string, unknown>;
  retryOf?: string;
  /** A caller-derived id (bulk replay): a second insert of it fails on the primary key. */
  executionId?: string;
  /** The inbound message that started it (a phone call's `[call]` message), for conversation journeys. */
  messageId?: string;
}

/** A recorded (not yet committed) execution and what its Temporal start needs. */
export interface PendingExecution {
  executionId: string;
  workflowInput: ExecutionWorkflowInput;
  triggerId: string | null;
  /** The customer's external id, for the run's summary (masked there); null when unknown. */
  customerExternalId?: string | null;
  /** Started while its organization was backlogged (src/fair-limiter.ts `Admission`): the run yields to others' (temporal/fairness.shared.ts). */
  backlogged?: boolean;
}

export const workflowNotActive = (id: string) =>
  conflict('WORKFLOW_NOT_ACTIVE', `Workflow ${id} is not active; activate it before running executions`, 'workflow_id');

/** Data of the workflow.* events: exactly the contract's fields (`finishExecution` builds the same in SQL from the finished row). */
export function workflowEventData(e: {
  workflowId: string;
  id: string;
  status: string;
  durationMs: number | null;
  customerId: string | null;
  channel: string;
}) {
  return {
    workflow_id: e.workflowId,
    execution_id: e.id,
    status: e.status,
    duration_ms: e.durationMs ?? 0,
    customer_id: e.customerId,
    channel: e.channel,
  };
}

/** An execution row as a JSON object (the table's column names), for `insertExecutionRowsSql`. */
export interface ExecutionStartRow {
  id: string;
  organization_id: string;
  workflow_id: string;
  revision: number;
  trigger_id: string | null;
  customer_id: string;
  channel: string;
  status: 'running';
  input: Record<string, unknown>;
  message_id: string | null;
  started_at: Date;
  /** The slot the execution holds (`concurrencyKey`): at most one running execution holds it. */
  concurrency_key: string;
}

const START_COLUMNS = 'id, organization_id, workflow_id, revision, trigger_id, customer_id, channel, status, input, message_id, started_at, concurrency_key';

/**
 * The slot of a workflow's execution for one customer under `configuration.concurrency`
 * (`per: "customer"`, `limit: 1`): a unique partial index on running executions
 * (Migration20261211000100_execution_concurrency) lets one hold it at a time.
 */
export const concurrencyKey = (workflowId: string, customerId: string) => `${workflowId}:${customerId}`;

/**
 * The INSERT of the executions an inbound message starts (inbound/message.writes.ts): the
 * rows of the JSON array `rowsJson` (`ExecutionStartRow`s; a SQL expression), when `when`
 * holds; it returns the ids it inserted. A row whose `concurrency_key` a running execution
 * holds is not inserted (`on_conflict: "skip"`): the unique index decides, so a concurrent
 * statement's uncommitted execution is waited for, not missed by this statement's snapshot.
 * Their Temporal starts follow the commit (`dispatchExecution`).
 */
export const insertExecutionRowsSql = (rowsJson: string, when: string) =>
  `insert into executions (${START_COLUMNS})
      select ${START_COLUMNS}
        from jsonb_populate_recordset(null::executions, ${rowsJson}::jsonb) where ${when}
      on conflict (concurrency_key) where status = 'running' and concurrency_key is not null do nothing
      returning id`;

/** How many executions may wait for one slot (`on_conflict: "queue"`); a message beyond it is skipped (`queue_full`). */
export const QUEUE_LIMIT = 10;

/**
 * The INSERT of the executions an inbound message queues (`on_conflict: "queue"`): the rows
 * of `rowsJson` whose id is in the JSON array `queueIds` that `startedIds` (a relation of the
 * ids inserted running) does not hold, as `queued` rows with `queued_at` (arrival order:
 * the clock when the statement holds the customer's row, which orders a customer's messages)
 * while fewer than `QUEUE_LIMIT` wait for the slot. When the running execution ends, the
 * database promotes the oldest (`promote_queued_execution`,
 * Migration20261213000100_execution_queue). It returns the ids it inserted.
 */
export const insertQueuedExecutionRowsSql = (rowsJson: string, when: string, queueIds: string, startedIds: string) =>
  `insert into executions (${START_COLUMNS}, queued_at)
      select ${START_COLUMNS.replace('status', "'queued'")}, clock_timestamp()
        from jsonb_populate_recordset(null::executions, ${rowsJson}::jsonb) r
       where ${when} and r.id in (select jsonb_array_elements_text(${queueIds}::jsonb)) and r.id not in (select id from ${startedIds})
         and (select count(*) from executions q where q.concurrency_key = r.concurrency_key and q.status = 'queued') < ${QUEUE_LIMIT}
      returning id`;

const RUNNING_EXECUTIONS = {
  name: 'execution-slot-holders',
  // Still running (the unique index), else ended since: the newest before the message.
  text: `select k.key, coalesce(
             (select e.id from executions e where e.concurrency_key = k.key and e.status = 'running'),
             (select e.id from executions e
               where e.organization_id = $3 and e.workflow_id = split_part(k.key, ':', 1) and e.concurrency_key = k.key and e.started_at <= $2
               order by e.started_at desc limit 1)) as id
           from unnest($1::text[]) k(key)`,
};

/**
 * The executions that held the slots (`concurrencyKey`s) when a message's starts were
 * skipped, read after the commit: the skipping statement's snapshot may not see them.
 */
export async function runningExecutionIds(pool: HotPool, organizationId: string, keys: string[], before: Date): Promise<Map<string, string>> {
  const rows = await hotQuery<{ key: string; id: string | null }>(pool, RUNNING_EXECUTIONS, [keys, before, organizationId]);
  return new Map(rows.flatMap((r) => (r.id === null ? [] : [[r.key, r.id] as const])));
}

/** What starting an execution needs of its workflow. */
export type RunnableWorkflow = Pick<Workflow, 'id' | 'name' | 'status' | 'revision' | 'configuration'>;

/**
 * Adds the execution to `em`'s unit of work (the caller commits it). The workflow must be
 * active; the execution runs on the workflow's current revision.
 */
export async function recordExecution(em: EntityManager, req: StartExecutionRequest): Promise<PendingExecution> {
  const { wf, customerExternalId } = await runnableWorkflowOf(em, req);

  const execution = em.create(Execution, {
    id: req.executionId ?? newId('execution'),
    organizationId: req.organizationId,
    workflowId: wf.id,
    revision: wf.revision,
    triggerId: req.triggerId ?? null,
    customerId: req.customerId ?? null,
    channel: req.channel,
    status: 'running',
    input: req.input,
    output: null,
    retryOf: req.retryOf ?? null,
    messageId: req.messageId ?? null,
    startedAt: new Date(),
  });
  recordEvent(em, {
    organizationId: req.organizationId,
    type: 'workflow.started',
    data: workflowEventData(execution),
    occurredAt: execution.startedAt,
  });
  return {
    executionId: execution.id,
    triggerId: execution.triggerId,
    customerExternalId,
    workflowInput: executionWorkflowInput(execution, { name: wf.name, nodes: wf.configuration!.nodes }),
  };
}

/**
 * The active workflow a start runs (404 WORKFLOW_NOT_FOUND / 409 WORKFLOW_NOT_ACTIVE
 * otherwise, before anything is written) and its customer's external id.
 */
export async function runnableWorkflowOf(em: EntityManager, req: StartExecutionRequest): Promise<{ wf: Workflow; customerExternalId: string | null }> {
  const wf = await em.findOne(Workflow, { id: req.workflowId, organizationId: req.organizationId, deletedAt: null });
  if (!wf) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
  if (wf.status !== 'active' || !wf.configuration) throw workflowNotActive(wf.id);
  const customer = req.customerId ? await em.findOne(Customer, { id: req.customerId, organizationId: req.organizationId }, { fields: ['externalId'] }) : null;
  return { wf, customerExternalId: customer?.externalId ?? null };
}

/** The one definition of an execution's workflow input, for the first start and the reconciler alike. */
export function executionWorkflowInput(
  e: Pick<Execution, 'id' | 'organizationId' | 'workflowId' | 'revision' | 'channel' | 'customerId' | 'input'>,
  wf: { name: string; nodes: ExecutionNodeSpec[] },
): ExecutionWorkflowInput {
  return {
    executionId: e.id,
    organizationId: e.organizationId,
    workflowId: e.workflowId,
    workflowName: wf.name,
    revision: e.revision,
    channel: e.channel,
    customerId: e.customerId,
    input: e.input,
    nodes: wf.nodes,
  };
}

/** The row a reconciled start is rebuilt from (`EXECUTION_START.claimSql`). */
interface UnstartedExecutionRow {
  id: string;
  organization_id: string;
  workflow_id: string;
  revision: number;
  trigger_id: string | null;
  customer_id: string | null;
  customer_external_id: string | null;
  channel: string;
  input: Record<string, unknown>;
  name: string;
  configuration: { nodes: ExecutionNodeSpec[] };
}

/** A claim statement (`claimed`: the leased execution rows) with what their workflow's input needs besides. */
const claimedExecutionSql = (claimed: string) => `with claimed as (${claimed})
  select e.id, e.organization_id, e.workflow_id, e.revision, e.trigger_id, e.customer_id, e.channel, e.input,
         w.name, r.configuration, c.external_id as customer_external_id
    from claimed e
    join workflows w on w.id = e.workflow_id
    join workflow_revisions r on r.workflow_id = e.workflow_id and r.revision = e.revision
    left join customers c on c.id = e.customer_id`;

/**
 * Executions as a durable start (starts/durable-start.ts): the workflow id is the execution
 * id, and a second start while the run is open answers with that run (USE_EXISTING).
 */
export const EXECUTION_START: StartKind<PendingExecution> = {
  table: 'executions',
  workflowType: EXECUTION_WORKFLOW_TYPE,
  workflowId: executionWorkflowId,
  conflictPolicy: 'USE_EXISTING',
  idOf: (pending) => pending.workflowInput.executionId,
  beforeStart: (services) => failpoint(services.config, 'execution.before_temporal_start'),
  options: (pending, services) => {
    const input: ExecutionWorkflowInput = { ...pending.workflowInput, infraRetryMs: infraRetryMsOf(services.config), version: EXECUTION_WORKFLOW_VERSION };
    const pairs: SearchAttributePair[] = [
      { key: SearchAttributeKeys.organizationId, value: input.organizationId },
      { key: SearchAttributeKeys.workflowId, value: input.workflowId },
      { key: SearchAttributeKeys.channel, value: input.channel },
    ];
    if (pending.triggerId) pairs.push({ key: SearchAttributeKeys.triggerId, value: pending.triggerId });
    if (input.customerId) pairs.push({ key: SearchAttributeKeys.customerId, value: input.customerId });
    return {
      args: [input],
      searchAttributes: pairs,
      memo: { workflowName: input.workflowName, workflowId: input.workflowId, revision: input.revision },
      ...executionMetadata(services.config, { ...input, customerExternalId: pending.customerExternalId, triggerId: pending.triggerId }),
      priority: organizationPriority(input.organizationId, { backlogged: pending.backlogged === true }),
    };
  },
  // The claimed row (the CTE) with what its workflow's input needs besides.
  claimSql: claimedExecutionSql(
    claimOneSql('executions', `temporal_started_at is null and status = 'running' and started_at < now() - (? * interval '1 millisecond')`, 'started_at'),
  ),
  fromRow: (row: UnstartedExecutionRow, _services, admission) => ({
    executionId: row.id,
    backlogged: admission.backlogged,
    triggerId: row.trigger_id,
    customerExternalId: row.customer_external_id,
    workflowInput: executionWorkflowInput(
      {
        id: row.id,
        organizationId: row.organization_id,
        workflowId: row.workflow_id,
        revision: row.revision,
        channel: row.channel,
        customerId: row.customer_id,
        input: row.input,
      },
      { name: row.name, nodes: row.configuration.nodes },
    ),
  }),
};

/**
 * Starts the Temporal workflow of a committed execution and stamps the row: in the next
 * batch of `batchStamp` (inbound messages' starts), else at once (`dispatchStart`). Never
 * throws for a Temporal outage: the row stays unstamped and the reconciler retries it.
 * Returns whether the start is confirmed.
 *
 * A batched stamp is a background task of its own (drained at shutdown like the start):
 * the start returns once Temporal has answered, so its slot among the API's Temporal calls
 * is not held for the batch's window (up to 200 ms) too, which made a slot start about 5
 * conversations a second (docs/performance.md, section `fairness`).
 */
export async function dispatchExecution(services: Services, pending: PendingExecution, opts: { batchStamp?: StartStamps } = {}): Promise<boolean> {
  const batch = opts.batchStamp;
  const stampLater = async (id: string) => services.background.run('start stamp', () => batch!.add(id));
  return await dispatchStart(services, EXECUTION_START, pending, batch ? { stamp: stampLater } : {});
}

/** The claim of one named execution that runs but was never started (bindings: lease ms, id), as the reconciler claims. */
const CLAIM_NAMED_SQL = claimedExecutionSql(
  `update executions set start_claimed_until = now() + (? * interval '1 millisecond')
    where id = ? and status = 'running' and temporal_started_at is null and (start_claimed_until is null or start_claimed_until < now())
    returning *`,
);

/**
 * Starts on Temporal an execution the database promoted from its queue (`wfa_promoted`,
 * Migration20261221000100_promote_notify), at once instead of at the reconciler's next pass:
 * claimed like the reconciler claims (a racing pass or process skips it), started, stamped.
 * Says whether this call confirmed the start; false also when someone else has it.
 */
export async function startPromotedExecution(services: Services, executionId: string): Promise<boolean> {
  const em = services.orm.em.fork();
  const [row] = await em.execute<UnstartedExecutionRow[]>(CLAIM_NAMED_SQL, [START_CLAIM_LEASE_MS, executionId]);
  if (!row) return false;
  if (await dispatchStart(services, EXECUTION_START, EXECUTION_START.fromRow(row as never, services, { backlogged: false }), { em, timeoutMs: RECONCILE_TEMPORAL_TIMEOUT_MS })) return true;
  await releaseStartClaim(em, 'executions', executionId);
  return false;
}

/** Records and commits the execution with its `workflow.started` event, then starts it on Temporal. */
/** `claim`: the request's `Idempotency-Key` claim; the execution's id is its recovery point, committed with the execution. */
export async function startExecution(services: Services, req: StartExecutionRequest, claim?: HeldClaim): Promise<{ executionId: string }> {
  const pending = await transactionalRetrying(services.orm.em as EntityManager, async (tx) => {
    const recorded = await recordExecution(tx, req);
    await claim?.recordIn(tx, { execution_id: recorded.executionId });
    return recorded;
  });
  await dispatchExecution(services, pending);
  return { executionId: pending.executionId };
}
