/**
 * Owns reading executions (list, detail with steps, metrics) and the operator actions
 * retry and cancel. Every query is scoped by organization and by the workflow in the path;
 * another organization's execution is a 404.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { AppError, conflict, notFound } from '../../http/errors';
import { type Page, offsetOf } from '../../http/pagination';
import type { Services } from '../../services';
import { Workflow } from '../workflows/workflow.entity';
import { executionWorkflowId } from '../../../temporal/executions.shared';
import { Execution, ExecutionStep, type ExecutionStatus } from './execution.entity';
import { finishExecution } from './execution.recorder';
import { startExecution } from './execution.starter';

const workflowNotFound = () => notFound('WORKFLOW_NOT_FOUND', 'Workflow');
const executionNotFound = () => notFound('EXECUTION_NOT_FOUND', 'Execution');

export interface ExecutionFilter {
  status?: ExecutionStatus;
  start_date?: string;
  end_date?: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toExecutionOut(e: Execution) {
  return {
    id: e.id,
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
    const started: Record<string, Date> = {};
    if (filter.start_date) started.$gte = new Date(filter.start_date);
    if (filter.end_date) started.$lt = new Date(filter.end_date);
    if (Object.keys(started).length > 0) where.startedAt = started;
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
    return { ...toExecutionOut(e), steps: steps.map(toStepOut) };
  }

  /** A new execution with the same input, customer, channel and trigger, linked by `retry_of`. */
  async retry(organizationId: string, workflowId: string, executionId: string): Promise<Execution> {
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
      ...(original.customerId ? { customerId: original.customerId } : {}),
      ...(original.triggerId ? { triggerId: original.triggerId } : {}),
    });
    return await this.get(organizationId, workflowId, id);
  }

  /**
   * Marks a running execution cancelled (the database is the record the API serves) and
   * cancels its Temporal run, whose own completion then finds nothing left to do.
   */
  async cancel(organizationId: string, workflowId: string, executionId: string): Promise<Execution> {
    const em = this.em();
    const e = await this.get(organizationId, workflowId, executionId, em);
    const changed = await em.transactional((tx) =>
      finishExecution(tx as EntityManager, e.id, { status: 'cancelled', output: { ...(e.output ?? {}), next_action: 'cancelled' } }),
    );
    if (!changed) throw conflict('EXECUTION_NOT_RUNNING', `Execution ${e.id} is not running`);
    try {
      await this.services.temporal.client.workflow.getHandle(executionWorkflowId(e.id)).cancel();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) {
        this.services.logger.warn({ err, executionId: e.id }, 'Temporal cancel failed; the run stops at its next step');
      }
    }
    return await this.get(organizationId, workflowId, executionId);
  }

  async metrics(organizationId: string, workflowId: string, q: { start_date?: string; end_date?: string; granularity: 'hour' | 'day' | 'week' | 'month' }) {
    const em = this.em();
    await this.requireWorkflow(em, organizationId, workflowId);
    const end = q.end_date ? new Date(q.end_date) : new Date();
    const start = q.start_date ? new Date(q.start_date) : new Date(end.getTime() - 30 * 24 * 3600 * 1000);
    if (end <= start) throw new AppError(400, 'INVALID_DATE_RANGE', 'end_date must be after start_date', { field: 'end_date' });
    const range = [organizationId, workflowId, start, end];
    const [totals] = await em.execute<
      Array<{ total: number; success: number; failed: number; avg_ms: number | null; customers: number }>
    >(
      `select count(*)::int as total,
              count(*) filter (where status = 'success')::int as success,
              count(*) filter (where status = 'failed')::int as failed,
              round(avg(duration_ms) filter (where status in ('success', 'failed')))::int as avg_ms,
              count(distinct customer_id)::int as customers
         from executions where organization_id = ? and workflow_id = ? and started_at >= ? and started_at < ?`,
      range,
    );
    const channels = await em.execute<Array<{ channel: string; n: number }>>(
      `select channel, count(*)::int as n from executions
        where organization_id = ? and workflow_id = ? and started_at >= ? and started_at < ? group by channel`,
      range,
    );
    const [messages] = await em.execute<Array<{ sent: number; received: number }>>(
      `select count(*) filter (where m.direction = 'outbound')::int as sent,
              count(*) filter (where m.direction = 'inbound')::int as received
         from messages m join executions e on e.id = m.execution_id
        where e.organization_id = ? and e.workflow_id = ? and m.created_at >= ? and m.created_at < ?`,
      range,
    );
    const buckets = await em.execute<Array<{ bucket: string; n: number; success: number; failed: number; avg_ms: number | null }>>(
      `select to_char(date_trunc('${q.granularity}', started_at at time zone 'UTC'), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as bucket,
              count(*)::int as n,
              count(*) filter (where status = 'success')::int as success,
              count(*) filter (where status = 'failed')::int as failed,
              round(avg(duration_ms) filter (where status in ('success', 'failed')))::int as avg_ms
         from executions where organization_id = ? and workflow_id = ? and started_at >= ? and started_at < ?
        group by 1 order by 1`,
      range,
    );
    const rate = (s: number, f: number) => (s + f === 0 ? 0 : Math.round((s / (s + f)) * 10_000) / 10_000);
    const t = totals ?? { total: 0, success: 0, failed: 0, avg_ms: null, customers: 0 };
    return {
      workflow_id: workflowId,
      period: { start_date: start.toISOString(), end_date: end.toISOString() },
      granularity: q.granularity,
      metrics: {
        total_executions: t.total,
        successful_executions: t.success,
        failed_executions: t.failed,
        success_rate: rate(t.success, t.failed),
        average_duration_ms: t.avg_ms ?? 0,
        total_messages_sent: messages?.sent ?? 0,
        total_messages_received: messages?.received ?? 0,
        unique_customers: t.customers,
        channel_breakdown: Object.fromEntries(channels.map((c) => [c.channel, c.n])),
      },
      // Buckets start at UTC midnight (hour: the hour; week: Monday); dates are YYYY-MM-DD except for hours.
      daily_metrics: buckets.map((b) => ({
        date: q.granularity === 'hour' ? b.bucket : b.bucket.slice(0, 10),
        executions: b.n,
        success_rate: rate(b.success, b.failed),
        average_duration_ms: b.avg_ms ?? 0,
      })),
    };
  }
}
