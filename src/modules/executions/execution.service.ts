/**
 * Owns reading executions (list, detail with steps, metrics) and the operator actions
 * retry and cancel. Every query is scoped by organization and by the workflow in the path;
 * another organization's execution is a 404.
 */
import type { HeldClaim } from '../../http/idempotency';
import type { EntityManager } from '@mikro-orm/postgresql';
import { dateFilter, type Granularity, resolvePeriod, summarizeExecutions } from '../metrics/execution-metrics';
import { conflict, notFound } from '../../errors';
import { type Page, offsetOf } from '../../http/pagination';
import type { Services } from '../../services';
import { Workflow } from '../workflows/workflow.entity';
import { Execution, ExecutionStep, type ExecutionStatus } from './execution.entity';
import { sendTemporalCancel } from './execution.canceller';
import { finishExecution } from './execution.recorder';
import { startExecution } from './execution.starter';
import type { Config } from '../../config';
import { temporalUiLink } from '../../temporal-ui';
import { executionWorkflowId } from '../../../temporal/executions.shared';

const workflowNotFound = () => notFound('WORKFLOW_NOT_FOUND', 'Workflow');
const executionNotFound = () => notFound('EXECUTION_NOT_FOUND', 'Execution');

export interface ExecutionFilter {
  status?: ExecutionStatus;
  start_date?: string;
  end_date?: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** An execution as the API returns it; `config` adds the link to its run in the Temporal UI. */
export function toExecutionOut(e: Execution, config?: Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>) {
  return {
    id: e.id,
    ...(config ? temporalUiLink(config, executionWorkflowId(e.id)) : {}),
    workflow_id: e.workflowId,
    status: e.status,
    started_at: e.startedAt.toISOString(),
    completed_at: iso(e.completedAt),
    duration_ms: e.durationMs,
    customer_id: e.customerId,
    channel: e.channel,
    input: e.input,
    output: e.output,
    trigger_id: e.triggerId,
    retry_of: e.retryOf,
    ...(e.resetFromRunId ? { reset_from_run_id: e.resetFromRunId } : {}),
    ...(e.queuedAt ? { queued_at: e.queuedAt.toISOString() } : {}),
    revision: e.revision,
    error: e.errorType || e.errorMessage ? { type: e.errorType, message: e.errorMessage } : null,
  };
}

export function toStepOut(s: ExecutionStep) {
  return {
    node_id: s.nodeId,
    type: s.type,
    status: s.status,
    started_at: s.startedAt.toISOString(),
    completed_at: iso(s.completedAt),
    duration_ms: s.durationMs,
    input: s.input,
    output: s.output,
    error: s.errorType || s.errorMessage ? { type: s.errorType, message: s.errorMessage } : null,
  };
}

export class ExecutionService {
  constructor(private readonly services: Services) {}

  private em(): EntityManager {
    return this.services.orm.em.fork() as EntityManager;
  }

  /** Executions of a deleted workflow stay readable: the workflow only has to have existed here. */
  private async requireWorkflow(em: EntityManager, organizationId: string, workflowId: string): Promise<Workflow> {
    const wf = await em.findOne(Workflow, { id: workflowId, organizationId });
    if (!wf) throw workflowNotFound();
    return wf;
  }

  async list(organizationId: string, workflowId: string, filter: ExecutionFilter, page: Page) {
    const em = this.em();
    await this.requireWorkflow(em, organizationId, workflowId);
    const where: Record<string, unknown> = { organizationId, workflowId };
    if (filter.status) where.status = filter.status;
    const { from, to } = dateFilter(filter.start_date, filter.end_date);
    if (from || to) where.startedAt = { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) };
    const [items, total] = await em.findAndCount(Execution, where, {
      orderBy: { startedAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
    });
    return { items, total };
  }

  async get(organizationId: string, workflowId: string, executionId: string, em = this.em()): Promise<Execution> {
    await this.requireWorkflow(em, organizationId, workflowId);
    const e = await em.findOne(Execution, { id: executionId, organizationId, workflowId });
    if (!e) throw executionNotFound();
    return e;
  }

  async detail(organizationId: string, workflowId: string, executionId: string) {
    const em = this.em();
    const e = await this.get(organizationId, workflowId, executionId, em);
    const steps = await em.find(ExecutionStep, { executionId: e.id }, { orderBy: { startedAt: 'asc', completedAt: 'asc', id: 'asc' } });
    return { ...toExecutionOut(e, this.services.config), steps: steps.map(toStepOut) };
  }

  /**
   * A new execution with the same input, customer, channel and trigger, linked by `retry_of`.
   * A bulk replay passes the retry's id (derived from the replay and the original), so a
   * repeated call fails on the primary key instead of starting a second retry.
   */
  async retry(organizationId: string, workflowId: string, executionId: string, opts: { retryId?: string; claim?: HeldClaim | undefined } = {}): Promise<Execution> {
    const original = await this.get(organizationId, workflowId, executionId);
    if (original.status !== 'failed' && original.status !== 'cancelled') {
      throw conflict('EXECUTION_NOT_RETRYABLE', `Only failed or cancelled executions can be retried; this one is ${original.status}`);
    }
    const { executionId: id } = await startExecution(this.services, {
      organizationId,
      workflowId,
      channel: original.channel,
      input: original.input,
      retryOf: original.id,
      ...(opts.retryId ? { executionId: opts.retryId } : {}),
      ...(original.customerId ? { customerId: original.customerId } : {}),
      ...(original.triggerId ? { triggerId: original.triggerId } : {}),
    }, opts.claim);
    return await this.get(organizationId, workflowId, id);
  }

  /**
   * Marks a running execution cancelled (the database is the record the API serves) and
   * cancels its Temporal run, whose own completion then finds nothing left to do. The cancel
   * is stamped on the row once Temporal took it (see execution.canceller.ts).
   */
  async cancel(organizationId: string, workflowId: string, executionId: string): Promise<Execution> {
    const em = this.em();
    const e = await this.get(organizationId, workflowId, executionId, em);
    const changed = await em.transactional((tx) =>
      finishExecution(tx as EntityManager, e.id, { status: 'cancelled', output: { ...(e.output ?? {}), next_action: 'cancelled' } }),
    );
    if (!changed) throw conflict('EXECUTION_NOT_RUNNING', `Execution ${e.id} is not running`);
    // A lost cancel leaves the row unstamped; the worker's reconciler re-sends it.
    await sendTemporalCancel(this.services, e.id, em);
    return await this.get(organizationId, workflowId, executionId);
  }

  async metrics(organizationId: string, workflowId: string, q: { start_date?: string; end_date?: string; granularity: Granularity }) {
    const em = this.em();
    await this.requireWorkflow(em, organizationId, workflowId);
    const { start, end } = resolvePeriod(q.start_date, q.end_date);
    const range = [organizationId, workflowId, start, end];
    const summary = await summarizeExecutions(
      em,
      {
        sql: `select status, duration_ms, customer_id, channel, started_at as at from executions
               where organization_id = ? and workflow_id = ? and started_at >= ? and started_at < ?`,
        params: range,
      },
      q.granularity,
      { start, end },
    );
    const [messages] = await em.execute<Array<{ sent: number; received: number }>>(
      `select count(*) filter (where m.direction = 'outbound')::int as sent,
              count(*) filter (where m.direction = 'inbound')::int as received
         from messages m join executions e on e.id = m.execution_id
        where e.organization_id = ? and e.workflow_id = ? and m.created_at >= ? and m.created_at < ?`,
      range,
    );
    return {
      workflow_id: workflowId,
      period: { start_date: start.toISOString(), end_date: end.toISOString() },
      granularity: q.granularity,
      metrics: { ...summary.metrics, total_messages_sent: messages?.sent ?? 0, total_messages_received: messages?.received ?? 0 },
      daily_metrics: summary.daily_metrics,
    };
  }
}
