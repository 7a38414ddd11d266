/**
 * Owns starting an execution, the dual write between PostgreSQL and Temporal:
 *
 * 1. `recordExecution(em, req)` adds the execution row (status `running`,
 *    `temporal_started_at` null) and the `workflow.started` event to the caller's
 *    transaction; the workflow's `execution_count` follows at its commit (a deferred
 *    trigger, Migration20261128000100_deferred_counters).
 * 2. After the commit, `dispatchExecution` starts the Temporal workflow whose id is the
 *    execution id (reuse policy REJECT_DUPLICATE, conflict policy USE_EXISTING: a second
 *    start of the same id never creates a second run) and stamps `temporal_started_at`
 *    (inbound messages' starts in batches, `StartStamps`).
 *
 * If the process dies between 1 and 2, or Temporal is unreachable, the row stays
 * unstamped and the worker's reconciler (`reconcileExecutions`) starts it later; the
 * workflow-id policies make that start exactly once even when both race.
 */
import { infraRetryMsOf } from '../../config';
import type { EntityManager } from '@mikro-orm/postgresql';
import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { conflict, notFound } from '../../errors';
import { failpoint } from '../../failpoints';
import { boundedTemporalCall, RECONCILE_TEMPORAL_TIMEOUT_MS } from '../../temporal-calls';
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
import { transactionalRetrying } from '../../db/transaction';

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
}

/** A recorded (not yet committed) execution and what its Temporal start needs. */
export interface PendingExecution {
  executionId: string;
  workflowInput: ExecutionWorkflowInput;
  triggerId: string | null;
  /** The customer's external id, for the run's summary (masked there); null when unknown. */
  customerExternalId?: string | null;
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

/** What starting an execution needs of its workflow. */
export type RunnableWorkflow = Pick<Workflow, 'id' | 'name' | 'status' | 'revision' | 'configuration'>;

/**
 * Adds the execution to `em`'s unit of work (the caller commits it). The workflow must be
 * active; the execution runs on the workflow's current revision.
 */
export async function recordExecution(em: EntityManager, req: StartExecutionRequest): Promise<PendingExecution> {
  const wf = await em.findOne(Workflow, { id: req.workflowId, organizationId: req.organizationId, deletedAt: null });
  if (!wf) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
  if (wf.status !== 'active' || !wf.configuration) throw workflowNotActive(wf.id);
  const customer = req.customerId ? await em.findOne(Customer, { id: req.customerId, organizationId: req.organizationId }, { fields: ['externalId'] }) : null;

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
    messageId: null,
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
    customerExternalId: customer?.externalId ?? null,
    workflowInput: executionWorkflowInput(execution, { name: wf.name, nodes: wf.configuration.nodes }),
  };
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

/**
 * Starts the Temporal workflow of a committed execution and stamps the row: on `em` (the
 * reconciler's transaction), or in the next batch of `batchStamp` (inbound messages' starts).
 * Never throws for a Temporal outage (nor waits on one longer than TEMPORAL_CALL_TIMEOUT_MS):
 * the row stays unstamped and the reconciler retries it. Returns whether the start is confirmed.
 */
export async function dispatchExecution(
  services: Services,
  pending: PendingExecution,
  opts: { em?: EntityManager; timeoutMs?: number; batchStamp?: StartStamps } = {},
): Promise<boolean> {
  failpoint(services.config, 'execution.before_temporal_start');
  const input: ExecutionWorkflowInput = { ...pending.workflowInput, infraRetryMs: infraRetryMsOf(services.config), version: EXECUTION_WORKFLOW_VERSION };
  const pairs: SearchAttributePair[] = [
    { key: SearchAttributeKeys.organizationId, value: input.organizationId },
    { key: SearchAttributeKeys.workflowId, value: input.workflowId },
    { key: SearchAttributeKeys.channel, value: input.channel },
  ];
  if (pending.triggerId) pairs.push({ key: SearchAttributeKeys.triggerId, value: pending.triggerId });
  if (input.customerId) pairs.push({ key: SearchAttributeKeys.customerId, value: input.customerId });
  const started = await boundedTemporalCall(
    services,
    () =>
      services.temporal.client.workflow.start(EXECUTION_WORKFLOW_TYPE, {
        taskQueue: services.config.TEMPORAL_TASK_QUEUE,
        workflowId: executionWorkflowId(input.executionId),
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: new TypedSearchAttributes(pairs),
        memo: { workflowName: input.workflowName, workflowId: input.workflowId, revision: input.revision },
        ...executionMetadata(services.config, { ...input, customerExternalId: pending.customerExternalId, triggerId: pending.triggerId }),
      }),
    // Already started (by us earlier, or by a racing reconciler): that run is the one.
    (err) => err instanceof WorkflowExecutionAlreadyStartedError,
    opts.timeoutMs,
    { execution_id: input.executionId },
  );
  if (!started) return false;
  if (opts.batchStamp) await opts.batchStamp.stamp(input.executionId);
  else {
    const em = opts.em ?? services.orm.em.fork();
    await em.execute('update executions set temporal_started_at = now() where id = ? and temporal_started_at is null', [input.executionId]);
  }
  return true;
}

/** Records and commits the execution with its `workflow.started` event, then starts it on Temporal. */
export async function startExecution(services: Services, req: StartExecutionRequest): Promise<{ executionId: string }> {
  const pending = await transactionalRetrying(services.orm.em as EntityManager, (tx) => recordExecution(tx, req));
  await dispatchExecution(services, pending);
  return { executionId: pending.executionId };
}

/**
 * Starts every running execution whose Temporal start was never confirmed and that is
 * older than `graceMs`. Rows are claimed with SKIP LOCKED so several workers share the
 * work; the workflow-id policies keep a start exactly-once anyway. Returns how many it
 * confirmed.
 */
export async function reconcileExecutions(services: Services, opts: { graceMs: number; batch?: number }): Promise<number> {
  const em = services.orm.em.fork() as EntityManager;
  let confirmed = 0;
  await em.transactional(async (tx) => {
    const rows = await tx.execute<
      Array<{
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
      }>
    >(
      `select e.id, e.organization_id, e.workflow_id, e.revision, e.trigger_id, e.customer_id, e.channel, e.input,
              w.name, r.configuration, c.external_id as customer_external_id
         from executions e
         join workflows w on w.id = e.workflow_id
         join workflow_revisions r on r.workflow_id = e.workflow_id and r.revision = e.revision
         left join customers c on c.id = e.customer_id
        where e.temporal_started_at is null and e.status = 'running'
          and e.started_at < now() - (? * interval '1 millisecond')
        order by e.started_at
        limit ?
        for update of e skip locked`,
      [opts.graceMs, opts.batch ?? 100],
    );
    for (const row of rows) {
      const workflowInput = executionWorkflowInput(
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
      );
      const ok = await dispatchExecution(
        services,
        { executionId: row.id, triggerId: row.trigger_id, customerExternalId: row.customer_external_id, workflowInput },
        { em: tx as EntityManager, timeoutMs: RECONCILE_TEMPORAL_TIMEOUT_MS },
      );
      if (ok) confirmed++;
    }
  });
  return confirmed;
}
