/**
 * Owns the trigger lifecycle: create (active), update of name and configuration, soft
 * delete, the state transitions (`ALLOWED_FROM`, the contract's table in docs/triggers.md),
 * and the read side of firings (executions list, detail, metrics) joined with the
 * executions they started. Every query is scoped to the caller's organization; another
 * organization's trigger or workflow is not found.
 * A schedule trigger's Temporal Schedule is synced inside the transaction that changes the
 * trigger, so the two never disagree after a failed call.
 */
import { randomBytes } from 'node:crypto';
import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { conflict, DomainError, invalid, notFound } from '../../errors';
import { type Page, offsetOf } from '../../http/pagination';
import { parseInput } from '../../http/validation';
import { z } from '../../http/zod';
import { flushOrConflict } from '../../db/flush';
import { newId } from '../../ids';
import { sealSecret, sealedAt } from '../../secrets';
import type { Services } from '../../services';
import { dateFilter, type Granularity, resolvePeriod, summarizeExecutions } from '../metrics/execution-metrics';
import { Workflow } from '../workflows/workflow.entity';
import { Trigger, type TriggerStatus, type TriggerType } from './trigger.entity';
import { deleteTriggerSchedule, syncTriggerSchedule } from './trigger-schedules';
import { CONFIG_SCHEMAS, classifyTriggerIssue, type TriggerIn, type WebhookTriggerConfig } from './trigger.schemas';

export interface TriggerListFilter {
  type?: TriggerType;
  status?: TriggerStatus;
  workflow_id?: string;
}

export const triggerNotFound = () => notFound('TRIGGER_NOT_FOUND', 'Trigger');
const workflowNotFound = () => notFound('WORKFLOW_NOT_FOUND', 'Workflow', 'workflow_id');
const nameTaken = (name: string) => conflict('TRIGGER_ALREADY_EXISTS', `A trigger named "${name}" already exists`, 'name');

export const webhookPath = (triggerId: string) => `/hooks/triggers/${triggerId}`;
export const apiTriggerPath = (triggerId: string) => `/v1/triggers/${triggerId}/fire`;

/** 32 random bytes, base64url: well above the 24 bytes a guessable-secret attack would need. */
export const generateWebhookSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

export type Transition = 'activate' | 'deactivate' | 'pause' | 'resume';

/**
 * Which source states each operation accepts: the contract's state table (activate,
 * deactivate and pause from any state; resume from paused), and each is idempotent, so
 * resuming an active trigger is accepted too and changes nothing.
 */
const ALLOWED_FROM: Record<Transition, readonly TriggerStatus[]> = {
  activate: ['inactive', 'paused', 'active'],
  deactivate: ['active', 'inactive', 'paused'],
  pause: ['active', 'inactive', 'paused'],
  resume: ['paused', 'active'],
};
const TARGET: Record<Transition, TriggerStatus> = { activate: 'active', deactivate: 'inactive', pause: 'paused', resume: 'active' };

export interface ExecutionRow {
  id: string;
  trigger_id: string;
  workflow_id: string;
  execution_id: string | null;
  customer_id: string | null;
  channel: string;
  status: 'success' | 'failed' | 'running' | 'queued' | 'skipped';
  workflow_status: string | null;
  input: Record<string, unknown>;
  metadata: Record<string, unknown>;
  error_code: string | null;
  error_message: string | null;
  error_type: string | null;
  triggered_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
}

/**
 * A firing's outcome is its execution's, read at query time; `cancelled` counts as failed;
 * a firing the concurrency rule skipped is `skipped` (it has no execution).
 */
const DERIVED = `
  select te.id, te.trigger_id, te.workflow_id, te.execution_id, te.customer_id, te.channel, te.input, te.metadata,
         te.triggered_at,
         case when te.status in ('failed', 'skipped') then te.status
              when e.status is null then 'running'
              when e.status in ('failed', 'cancelled') then 'failed'
              else e.status end as status,
         e.status as workflow_status,
         coalesce(te.error_code, case when e.status in ('failed', 'cancelled') then 'WORKFLOW_EXECUTION_FAILED' end) as error_code,
         coalesce(te.error_message, e.error_message, case when e.status = 'cancelled' then 'The workflow execution was cancelled' end) as error_message,
         e.error_type,
         coalesce(te.completed_at, e.completed_at) as completed_at,
         coalesce(e.duration_ms, case when te.completed_at is not null
           then round(extract(epoch from (te.completed_at - te.triggered_at)) * 1000)::int end) as duration_ms,
         coalesce(te.customer_id, e.customer_id) as any_customer_id
    from trigger_executions te
    left join executions e on e.id = te.execution_id and e.organization_id = te.organization_id`;

export interface DateRange {
  start?: string;
  end?: string;
}

export class TriggerService {
  constructor(
    private readonly em: EntityManager,
    private readonly services: Services,
  ) {}

  async list(organizationId: string, filter: TriggerListFilter, page: Page) {
    const where: Record<string, unknown> = { organizationId, deletedAt: null };
    if (filter.type) where.type = filter.type;
    if (filter.status) where.status = filter.status;
    if (filter.workflow_id) where.workflowId = filter.workflow_id;
    const [items, total] = await this.em.findAndCount(Trigger, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
    });
    return { items, total };
  }

  async get(organizationId: string, id: string, em: EntityManager = this.em, lock = false): Promise<Trigger> {
    const trigger = await em.findOne(
      Trigger,
      { id, organizationId, deletedAt: null },
      lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {},
    );
    if (!trigger) throw triggerNotFound();
    return trigger;
  }

  /**
   * The webhook trigger a request to `/hooks/triggers/{id}` is for, whatever its
   * organization (the receiver authenticates by the trigger's secret, not by a credential).
   */
  async getWebhookTrigger(id: string): Promise<Trigger> {
    const trigger = await this.em.findOne(Trigger, { id, type: 'webhook', deletedAt: null });
    if (!trigger) throw triggerNotFound();
    return trigger;
  }

  async create(organizationId: string, input: TriggerIn): Promise<Trigger> {
    const workflow = await this.em.findOne(Workflow, { id: input.workflow_id, organizationId, deletedAt: null }, { fields: ['id', 'name', 'channel'] });
    if (!workflow) throw workflowNotFound();
    const id = newId('trigger');
    const configuration = this.assignServiceFields(id, input.type, input.configuration as Record<string, unknown>, undefined);
    const now = new Date();
    let scheduleCreated = false;
    try {
      return await this.em.transactional(async (em) => {
        const trigger = em.create(Trigger, {
          id,
          organizationId,
          workflowId: workflow.id,
          name: input.name,
          type: input.type,
          status: 'active',
          channel: input.channel ?? workflow.channel,
          configuration,
          createdAt: now,
          updatedAt: now,
          activatedAt: now,
        });
        await flushOrConflict(em, () => nameTaken(input.name));
        if (trigger.type === 'schedule') {
          await syncTriggerSchedule(this.services, { trigger, workflowName: workflow.name });
          scheduleCreated = true;
        }
        return trigger;
      });
    } catch (err) {
      // The commit failed after the schedule was made: take the schedule back.
      if (scheduleCreated) await deleteTriggerSchedule(this.services, id).catch(() => undefined);
      throw err;
    }
  }

  async update(organizationId: string, id: string, input: { name?: string; configuration?: Record<string, unknown> }): Promise<Trigger> {
    return this.em.transactional(async (em) => {
      const trigger = await this.get(organizationId, id, em, true);
      if (input.name !== undefined) trigger.name = input.name;
      if (input.configuration !== undefined) {
        const schema = z.object({ configuration: CONFIG_SCHEMAS[trigger.type] });
        const parsed = parseInput(schema, { configuration: input.configuration }, classifyTriggerIssue).configuration as Record<string, unknown>;
        trigger.configuration = this.assignServiceFields(trigger.id, trigger.type, parsed, trigger.configuration);
      }
      trigger.updatedAt = new Date();
      await flushOrConflict(em, () => nameTaken(trigger.name));
      if (trigger.type === 'schedule') await syncTriggerSchedule(this.services, { trigger, workflowName: await this.workflowName(em, trigger) });
      return trigger;
    });
  }

  async delete(organizationId: string, id: string): Promise<void> {
    await this.em.transactional(async (em) => {
      const trigger = await this.get(organizationId, id, em, true);
      const now = new Date();
      trigger.deletedAt = now;
      trigger.updatedAt = now;
      if (trigger.status !== 'inactive') {
        trigger.status = 'inactive';
        trigger.deactivatedAt = now;
      }
      await em.flush();
      if (trigger.type === 'schedule') await deleteTriggerSchedule(this.services, trigger.id);
    });
  }

  async transition(organizationId: string, id: string, op: Transition): Promise<Trigger> {
    return this.em.transactional(async (em) => {
      const trigger = await this.get(organizationId, id, em, true);
      if (!ALLOWED_FROM[op].includes(trigger.status)) {
        throw new DomainError('conflict', 'INVALID_STATE_TRANSITION', `Cannot ${op} a trigger that is ${trigger.status}`, {
          details: `${op} is allowed from: ${ALLOWED_FROM[op].join(', ')}`,
        });
      }
      const target = TARGET[op];
      // A repeated operation changes nothing and keeps the time of the first one.
      if (trigger.status === target) return trigger;
      const now = new Date();
      trigger.status = target;
      trigger.updatedAt = now;
      if (op === 'activate') trigger.activatedAt = now;
      if (op === 'deactivate') trigger.deactivatedAt = now;
      if (op === 'pause') trigger.pausedAt = now;
      if (op === 'resume') trigger.resumedAt = now;
      await em.flush();
      if (trigger.type === 'schedule') await syncTriggerSchedule(this.services, { trigger, workflowName: await this.workflowName(em, trigger) });
      return trigger;
    });
  }

  async listExecutions(organizationId: string, triggerId: string, filter: { status?: string } & DateRange, page: Page) {
    await this.get(organizationId, triggerId);
    const { clause, params } = executionFilter(organizationId, triggerId, filter);
    const statusClause = filter.status ? ' and status = ?' : '';
    const statusParams = filter.status ? [filter.status] : [];
    const rows = (await this.em.execute(
      `select * from (${DERIVED} where ${clause}) x where true${statusClause} order by triggered_at desc, id desc limit ? offset ?`,
      [...params, ...statusParams, page.limit, offsetOf(page)],
    )) as ExecutionRow[];
    const count = (await this.em.execute(`select count(*)::int as n from (${DERIVED} where ${clause}) x where true${statusClause}`, [
      ...params,
      ...statusParams,
    ])) as Array<{ n: number }>;
    return { items: rows, total: count[0]?.n ?? 0 };
  }

  async getExecution(organizationId: string, triggerId: string, executionId: string): Promise<ExecutionRow> {
    await this.get(organizationId, triggerId);
    const rows = (await this.em.execute(`${DERIVED} where te.organization_id = ? and te.trigger_id = ? and te.id = ?`, [
      organizationId,
      triggerId,
      executionId,
    ])) as ExecutionRow[];
    const row = rows[0];
    if (!row) throw notFound('TRIGGER_EXECUTION_NOT_FOUND', 'Trigger execution');
    return row;
  }

  async metrics(organizationId: string, triggerId: string, q: { start_date?: string; end_date?: string; granularity: Granularity }) {
    const { start, end } = resolvePeriod(q.start_date, q.end_date);
    await this.get(organizationId, triggerId);
    const summary = await summarizeExecutions(
      this.em,
      {
        sql: `select status, duration_ms, any_customer_id as customer_id, channel, triggered_at as at from (${DERIVED}
               where te.organization_id = ? and te.trigger_id = ? and te.triggered_at >= ? and te.triggered_at < ? and te.status <> 'skipped') d`,
        params: [organizationId, triggerId, start, end],
      },
      q.granularity,
      { start, end },
    );
    return { trigger_id: triggerId, period: { start_date: start.toISOString(), end_date: end.toISOString() }, ...summary };
  }

  /** Sets `url` / `endpoint` / a generated secret; a client may send the assigned value back, never another. */
  private assignServiceFields(
    id: string,
    type: TriggerType,
    config: Record<string, unknown>,
    previous: Record<string, unknown> | undefined,
  ): Record<string, unknown> {
    const readOnly = (field: 'url' | 'endpoint', assigned: string) => {
      const given = config[field];
      if (given !== undefined && given !== assigned) {
        throw invalid(`configuration.${field} is assigned by the service and cannot be set`, `configuration.${field}`, 'INVALID_TRIGGER_CONFIG');
      }
      return assigned;
    };
    if (type === 'webhook') {
      const c = config as WebhookTriggerConfig;
      // Stored sealed (src/secrets.ts); a kept secret is sealed already.
      const secret = c.secret !== undefined ? sealSecret(this.services.config, c.secret, sealedAt.triggerSecret(id)) : ((previous?.secret as string | undefined) ?? sealSecret(this.services.config, generateWebhookSecret(), sealedAt.triggerSecret(id)));
      // Header names are case-insensitive: store them lower-cased so matching is exact.
      const headers = Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k.toLowerCase(), v]));
      return { ...c, headers, secret, url: readOnly('url', `${this.services.config.BASE_URL}${webhookPath(id)}`) };
    }
    if (type === 'api') return { ...config, endpoint: readOnly('endpoint', apiTriggerPath(id)) };
    return config;
  }

  private async workflowName(em: EntityManager, trigger: Trigger): Promise<string> {
    const wf = await em.findOne(Workflow, { id: trigger.workflowId }, { fields: ['name'] });
    return wf?.name ?? '';
  }
}

function executionFilter(organizationId: string, triggerId: string, range: DateRange) {
  const { from, to } = dateFilter(range.start, range.end);
  let clause = 'te.organization_id = ? and te.trigger_id = ?';
  const params: unknown[] = [organizationId, triggerId];
  if (from) {
    clause += ' and te.triggered_at >= ?';
    params.push(from);
  }
  if (to) {
    clause += ' and te.triggered_at < ?';
    params.push(to);
  }
  return { clause, params };
}

