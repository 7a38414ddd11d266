/**
 * Owns starting an execution, the dual write between PostgreSQL and Temporal:
 *
 * 1. `recordExecution(em, req)` adds the execution row (status `running`,
 *    `temporal_started_at` null), the workflow's `execution_count` and the
 *    `workflow.started` event to the caller's transaction.
 * 2. After the commit, `dispatchExecution` starts the Temporal workflow whose id is the
 *    execution id (reuse policy REJECT_DUPLICATE, conflict policy USE_EXISTING: a second
 *    start of the same id never creates a second run) and stamps `temporal_started_at`.
 *
 * If the process dies between 1 and 2, or Temporal is unreachable, the row stays
 * unstamped and the worker's reconciler (`reconcileExecutions`) starts it later; the
 * workflow-id policies make that start exactly once even when both race.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { AppError, notFound } from '../../http/errors';
import { failpoint } from '../../failpoints';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { Workflow } from '../workflows/workflow.entity';
import { SearchAttributeKeys } from '../../../temporal/shared';
import {
  EXECUTION_WORKFLOW_TYPE,
  executionWorkflowId,
  type ExecutionNodeSpec,
  type ExecutionWorkflowInput,
} from '../../../temporal/executions.shared';
import { Execution } from './execution.entity';

export interface StartExecutionRequest {
  organizationId: string;
  workflowId: string;
  triggerId?: string;
  customerId?: string;
  channel: string;
  input: Record<string, unknown>;
  retryOf?: string;
}

/** A recorded (not yet committed) execution and what its Temporal start needs. */
export interface PendingExecution {
  executionId: string;
  workflowInput: ExecutionWorkflowInput;
  triggerId: string | null;
}

export const workflowNotActive = (id: string) =>
  new AppError(409, 'WORKFLOW_NOT_ACTIVE', `Workflow ${id} is not active; activate it before running executions`, { field: 'workflow_id' });

/** Data of the workflow.* events: exactly the contract's fields. */
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

/**
 * Adds the execution to `em`'s unit of work (the caller commits it). The workflow must be
 * active; the execution runs on the workflow's current revision.
 */
export async function recordExecution(
  em: EntityManager,
  req: StartExecutionRequest,
  extra: { messageId?: string } = {},
): Promise<PendingExecution> {
  const wf = await em.findOne(Workflow, { id: req.workflowId, organizationId: req.organizationId, deletedAt: null });
  if (!wf) throw notFound('WORKFLOW_NOT_FOUND', 'Workflow');
  if (wf.status !== 'active' || !wf.configuration) throw workflowNotActive(wf.id);

  const execution = em.create(Execution, {
    id: newId('execution'),
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
    messageId: extra.messageId ?? null,
    startedAt: new Date(),
  });
  // Atomic increment: concurrent starts of one workflow must not lose counts.
  await em.execute('update workflows set execution_count = execution_count + 1 where id = ?', [wf.id]);
  recordEvent(em, {
    organizationId: req.organizationId,
    type: 'workflow.started',
    data: workflowEventData(execution),
    occurredAt: execution.startedAt,
  });
  return {
    executionId: execution.id,
    triggerId: execution.triggerId,
    workflowInput: {
      executionId: execution.id,
      organizationId: execution.organizationId,
      workflowId: wf.id,
      workflowName: wf.name,
      revision: wf.revision,
      channel: execution.channel,
      customerId: execution.customerId,
      input: execution.input,
      nodes: wf.configuration.nodes as ExecutionNodeSpec[],
    },
  };
}

/**
 * Starts the Temporal workflow of a committed execution and stamps the row. Never throws
 * for a Temporal outage: the row stays unstamped and the reconciler retries it.
 * Returns whether the start is confirmed.
 */
export async function dispatchExecution(
  services: Services,
  pending: PendingExecution,
  em: EntityManager = services.orm.em.fork() as EntityManager,
): Promise<boolean> {
  failpoint(services.config, 'execution.before_temporal_start');
  const input = pending.workflowInput;
  const pairs: SearchAttributePair[] = [
    { key: SearchAttributeKeys.organizationId, value: input.organizationId },
    { key: SearchAttributeKeys.workflowId, value: input.workflowId },
    { key: SearchAttributeKeys.channel, value: input.channel },
  ];
  if (pending.triggerId) pairs.push({ key: SearchAttributeKeys.triggerId, value: pending.triggerId });
  if (input.customerId) pairs.push({ key: SearchAttributeKeys.customerId, value: input.customerId });
  try {
    await services.temporal.client.workflow.start(EXECUTION_WORKFLOW_TYPE, {
      taskQueue: services.config.TEMPORAL_TASK_QUEUE,
      workflowId: executionWorkflowId(input.executionId),
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: new TypedSearchAttributes(pairs),
      memo: { workflowName: input.workflowName, workflowId: input.workflowId, revision: input.revision },
    });
  } catch (err) {
    // Already started (by us earlier, or by a racing reconciler): that run is the one.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
      services.logger.warn({ err, executionId: input.executionId }, 'execution start deferred to the reconciler');
      return false;
    }
  }
  await em.execute('update executions set temporal_started_at = now() where id = ? and temporal_started_at is null', [input.executionId]);
  return true;
}

/** Records and commits the execution with its `workflow.started` event, then starts it on Temporal. */
export async function startExecution(services: Services, req: StartExecutionRequest): Promise<{ executionId: string }> {
  const em = services.orm.em.fork() as EntityManager;
  const pending = await em.transactional((tx) => recordExecution(tx as EntityManager, req));
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
        channel: string;
        input: Record<string, unknown>;
        name: string;
        configuration: { nodes: ExecutionNodeSpec[] };
      }>
    >(
      `select e.id, e.organization_id, e.workflow_id, e.revision, e.trigger_id, e.customer_id, e.channel, e.input,
              w.name, r.configuration
         from executions e
         join workflows w on w.id = e.workflow_id
         join workflow_revisions r on r.workflow_id = e.workflow_id and r.revision = e.revision
        where e.temporal_started_at is null and e.status = 'running'
          and e.started_at < now() - (? * interval '1 millisecond')
        order by e.started_at
        limit ?
        for update of e skip locked`,
      [opts.graceMs, opts.batch ?? 100],
    );
    for (const row of rows) {
      const ok = await dispatchExecution(services, {
        executionId: row.id,
        triggerId: row.trigger_id,
        workflowInput: {
          executionId: row.id,
          organizationId: row.organization_id,
          workflowId: row.workflow_id,
          workflowName: row.name,
          revision: row.revision,
          channel: row.channel,
          customerId: row.customer_id,
          input: row.input,
          nodes: row.configuration.nodes,
        },
      }, tx as EntityManager);
      if (ok) confirmed++;
    }
  });
  return confirmed;
}
