/**
 * Owns what happens when a trigger fires, whatever the source (inbound message, schedule,
 * webhook, API call): find the message triggers a message matches, then record the firing
 * (trigger execution + counters + `trigger.activated`, one transaction) and start the
 * workflow execution through the executions module's `startExecution`.
 *
 * A firing that cannot start an execution (workflow not active, start refused) stays
 * recorded as a `failed` trigger execution with its error, and the error is rethrown.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../http/errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { Workflow } from '../workflows/workflow.entity';
import { Trigger, TriggerExecution } from './trigger.entity';
import type { MessageTriggerConfig } from './trigger.schemas';

export interface MessageMatchQuery {
  organizationId: string;
  channel: string;
  text: string;
  language?: string;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const normalizeSpace = (s: string) => s.trim().replace(/\s+/gu, ' ');
/** For exact matches, "Hello!" equals the keyword "hello": surrounding punctuation is not part of the phrase. */
const stripOuterPunctuation = (s: string) => s.replace(/^[\p{P}\p{S}\s]+|[\p{P}\p{S}\s]+$/gu, '');

/** True when the message text matches one of the trigger's keywords under its options. */
export function messageMatches(config: MessageTriggerConfig, text: string): boolean {
  const caseSensitive = config.case_sensitive ?? false;
  const fold = (s: string) => (caseSensitive ? s : s.toLocaleLowerCase());
  const message = normalizeSpace(text);
  for (const raw of config.keywords) {
    const keyword = normalizeSpace(raw);
    if (keyword === '') continue;
    if (config.exact_match) {
      if (fold(stripOuterPunctuation(message)) === fold(stripOuterPunctuation(keyword))) return true;
      continue;
    }
    // The keyword as a whole word or phrase: not glued to letters or digits on either side.
    const pattern = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(keyword).replace(/ /g, '\\s+')}(?![\\p{L}\\p{N}])`, caseSensitive ? 'u' : 'iu');
    if (pattern.test(message)) return true;
  }
  return false;
}

/** A trigger's language "en" accepts messages in "en" and "en-GB"; "en-GB" accepts only "en-GB". */
export function languageMatches(triggerLanguage: string | undefined, messageLanguage: string | undefined): boolean {
  if (!triggerLanguage || !messageLanguage) return true;
  const t = triggerLanguage.toLowerCase();
  const m = messageLanguage.toLowerCase();
  return m === t || m.startsWith(`${t}-`);
}

/**
 * Active `message` triggers of active workflows that the message matches, oldest first:
 * keywords (case_sensitive, exact_match), language (when both sides carry one) and channel
 * (`configuration.channel`, else the trigger's channel).
 */
export async function findMatchingMessageTriggers(
  em: EntityManager,
  q: MessageMatchQuery,
): Promise<Array<{ triggerId: string; workflowId: string }>> {
  const triggers = await em.find(
    Trigger,
    { organizationId: q.organizationId, type: 'message', status: 'active', deletedAt: null },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  const candidates = triggers.filter((t) => {
    const config = t.configuration as unknown as MessageTriggerConfig;
    return (config.channel ?? t.channel) === q.channel && languageMatches(config.language, q.language) && messageMatches(config, q.text);
  });
  if (candidates.length === 0) return [];
  const active = await em.find(
    Workflow,
    { id: { $in: [...new Set(candidates.map((t) => t.workflowId))] }, organizationId: q.organizationId, status: 'active', deletedAt: null },
    { fields: ['id'] },
  );
  const activeIds = new Set(active.map((w) => w.id));
  return candidates.filter((t) => activeIds.has(t.workflowId)).map((t) => ({ triggerId: t.id, workflowId: t.workflowId }));
}

export interface FireTriggerRequest {
  organizationId: string;
  triggerId: string;
  workflowId: string;
  channel: string;
  customerId?: string;
  input: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  /**
   * Dedupe key of the source event (a scheduled run's workflow id): a retried firing with
   * the same key returns the first firing instead of recording a second one.
   */
  sourceKey?: string;
}

export interface FireTriggerResult {
  triggerExecutionId: string;
  executionId: string;
}

export const triggerNotActive = (id: string) =>
  new AppError(409, 'TRIGGER_NOT_ACTIVE', `Trigger ${id} is not active; activate or resume it first`);

/**
 * Records one firing of an active trigger and starts its workflow execution. Throws 404
 * TRIGGER_NOT_FOUND / 409 TRIGGER_NOT_ACTIVE (nothing recorded) when the trigger cannot
 * fire, and 409 WORKFLOW_NOT_ACTIVE or the start's own error (recorded as a failed
 * trigger execution) when the execution cannot start.
 */
export async function fireTrigger(services: Services, req: FireTriggerRequest): Promise<FireTriggerResult> {
  const em = services.orm.em.fork() as EntityManager;
  const now = new Date();

  if (req.sourceKey) {
    const previous = await em.findOne(TriggerExecution, { triggerId: req.triggerId, sourceKey: req.sourceKey });
    if (previous) return resumeFiring(services, em, previous);
  }

  const recorded = await em.transactional(async (tx) => {
    // One statement checks the trigger can fire and bumps its counters, so concurrent
    // firings never lose a count.
    const rows = (await tx.execute(
      `update triggers set execution_count = execution_count + 1, last_triggered = greatest(coalesce(last_triggered, ?), ?), updated_at = updated_at
        where id = ? and organization_id = ? and deleted_at is null and status = 'active'
        returning workflow_id, type, channel`,
      [now, now, req.triggerId, req.organizationId],
    )) as Array<{ workflow_id: string; type: string; channel: string }>;
    const row = rows[0];
    if (!row) {
      const exists = await tx.findOne(Trigger, { id: req.triggerId, organizationId: req.organizationId, deletedAt: null }, { fields: ['id'] });
      throw exists ? triggerNotActive(req.triggerId) : new AppError(404, 'TRIGGER_NOT_FOUND', 'Trigger not found');
    }
    const te = tx.create(TriggerExecution, {
      id: newId('triggerExecution'),
      organizationId: req.organizationId,
      triggerId: req.triggerId,
      // The trigger's own workflow is the truth; a caller's copy may be stale.
      workflowId: row.workflow_id,
      customerId: req.customerId ?? null,
      channel: req.channel,
      status: 'running',
      input: req.input,
      metadata: { user_agent: null, ...req.metadata, timestamp: now.toISOString() },
      sourceKey: req.sourceKey ?? null,
      triggeredAt: now,
    });
    recordEvent(tx, {
      organizationId: req.organizationId,
      type: 'trigger.activated',
      occurredAt: now,
      data: {
        trigger_id: req.triggerId,
        trigger_execution_id: te.id,
        trigger_type: row.type,
        workflow_id: row.workflow_id,
        channel: req.channel,
        customer_id: req.customerId ?? null,
        triggered_at: now.toISOString(),
      },
    });
    await tx.flush();
    return te;
  });
  return startFor(services, em, recorded);
}

/** A retried firing: link the execution a crashed attempt may already have started, else start it. */
async function resumeFiring(services: Services, em: EntityManager, te: TriggerExecution): Promise<FireTriggerResult> {
  if (te.executionId) return { triggerExecutionId: te.id, executionId: te.executionId };
  if (te.status === 'failed') throw new AppError(409, te.errorCode ?? 'TRIGGER_EXECUTION_FAILED', te.errorMessage ?? 'Trigger execution failed');
  const orphan = (await em.execute(
    `select e.id from executions e
      where e.organization_id = ? and e.trigger_id = ? and e.started_at >= ?
        and not exists (select 1 from trigger_executions t where t.execution_id = e.id)
      order by e.started_at limit 1`,
    [te.organizationId, te.triggerId, te.triggeredAt],
  )) as Array<{ id: string }>;
  const found = orphan[0];
  if (found) {
    await em.nativeUpdate(TriggerExecution, { id: te.id }, { executionId: found.id });
    return { triggerExecutionId: te.id, executionId: found.id };
  }
  return startFor(services, em, te);
}

async function startFor(services: Services, em: EntityManager, te: TriggerExecution): Promise<FireTriggerResult> {
  const fail = async (code: string, message: string) => {
    await em.nativeUpdate(TriggerExecution, { id: te.id }, { status: 'failed', errorCode: code, errorMessage: message, completedAt: new Date() });
  };
  const workflow = await em.findOne(Workflow, { id: te.workflowId, organizationId: te.organizationId }, { fields: ['id', 'status', 'deletedAt'] });
  if (!workflow || workflow.deletedAt || workflow.status !== 'active') {
    const err = new AppError(409, 'WORKFLOW_NOT_ACTIVE', `Workflow ${te.workflowId} is not active; a trigger fires only for an active workflow`);
    await fail(err.code, err.message);
    throw err;
  }
  let executionId: string;
  try {
    ({ executionId } = await startExecutionFn()(services, {
      organizationId: te.organizationId,
      workflowId: te.workflowId,
      triggerId: te.triggerId,
      ...(te.customerId ? { customerId: te.customerId } : {}),
      channel: te.channel,
      input: te.input,
    }));
  } catch (err) {
    if (err instanceof AppError) {
      await fail(err.code, err.message);
      throw err;
    }
    services.logger.error({ err, trigger_execution_id: te.id }, 'trigger execution could not start its workflow execution');
    await fail('TRIGGER_EXECUTION_FAILED', 'The workflow execution could not be started');
    throw new AppError(500, 'TRIGGER_EXECUTION_FAILED', 'The workflow execution could not be started');
  }
  await em.nativeUpdate(TriggerExecution, { id: te.id }, { executionId });
  return { triggerExecutionId: te.id, executionId };
}

type StartExecution = typeof import('../executions/execution.starter').startExecution;

/** Loaded on first use: the executions module imports this one, so a static import would be a cycle. */
function startExecutionFn(): StartExecution {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('../executions/execution.starter') as { startExecution: StartExecution }).startExecution;
}
