/**
 * Owns what happens when a trigger fires, whatever the source (inbound message, schedule,
 * webhook, API call): find the message triggers a message matches, then record the firing
 * — trigger execution, the trigger's counters, `trigger.activated` and the workflow
 * execution itself (the executions module's `recordExecution`) in ONE transaction — and
 * start the execution on Temporal after the commit (`dispatchExecution`; the executions
 * reconciler starts it if this process dies first). A firing is therefore never recorded
 * without its execution, nor an execution of a trigger without its firing.
 *
 * A firing that cannot start an execution (workflow not active) is recorded as a `failed`
 * trigger execution with its error, and the error is rethrown.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../http/errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { dispatchExecution, recordExecution } from '../executions/execution.starter';
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

const workflowNotActive = (id: string) =>
  new AppError(409, 'WORKFLOW_NOT_ACTIVE', `Workflow ${id} is not active; a trigger fires only for an active workflow`);

/**
 * Records one firing of an active trigger with its workflow execution and starts that
 * execution. Throws 404 TRIGGER_NOT_FOUND / 409 TRIGGER_NOT_ACTIVE (nothing recorded) when
 * the trigger cannot fire, and 409 WORKFLOW_NOT_ACTIVE (recorded as a failed firing) when
 * its workflow cannot run.
 */
export async function fireTrigger(services: Services, req: FireTriggerRequest): Promise<FireTriggerResult> {
  const em = services.orm.em.fork() as EntityManager;

  if (req.sourceKey) {
    const previous = await em.findOne(TriggerExecution, { triggerId: req.triggerId, sourceKey: req.sourceKey });
    if (previous?.executionId) return { triggerExecutionId: previous.id, executionId: previous.executionId };
    if (previous) throw new AppError(409, previous.errorCode ?? 'TRIGGER_EXECUTION_FAILED', previous.errorMessage ?? 'Trigger execution failed');
  }

  try {
    const { te, pending } = await em.transactional(async (tx) => {
      const recorded = await recordFiring(tx, req);
      const pending = await recordExecution(tx, {
        organizationId: req.organizationId,
        workflowId: recorded.workflowId,
        triggerId: req.triggerId,
        ...(req.customerId ? { customerId: req.customerId } : {}),
        channel: req.channel,
        input: req.input,
      });
      recorded.executionId = pending.executionId;
      await tx.flush();
      return { te: recorded, pending };
    });
    await dispatchExecution(services, pending);
    return { triggerExecutionId: te.id, executionId: pending.executionId };
  } catch (err) {
    if (!(err instanceof AppError) || (err.code !== 'WORKFLOW_NOT_ACTIVE' && err.code !== 'WORKFLOW_NOT_FOUND')) throw err;
    // The trigger fired but its workflow cannot run: record the firing as failed.
    const failure = workflowNotActive(req.workflowId);
    const te = await em.fork().transactional(async (tx) => {
      const recorded = await recordFiring(tx as EntityManager, req, failure);
      await tx.flush();
      return recorded;
    });
    throw new AppError(failure.status, failure.code, failure.message.replace(req.workflowId, te.workflowId));
  }
}

/** Checks the trigger can fire, bumps its counters and adds the firing and its event to `tx`. */
async function recordFiring(tx: EntityManager, req: FireTriggerRequest, failure?: AppError): Promise<TriggerExecution> {
  const now = new Date();
  // One statement checks the trigger can fire and bumps its counters: concurrent firings never lose a count.
  const rows = (await tx.execute(
    `update triggers set execution_count = execution_count + 1, last_triggered = greatest(coalesce(last_triggered, ?), ?)
      where id = ? and organization_id = ? and deleted_at is null and status = 'active'
      returning workflow_id, type`,
    [now, now, req.triggerId, req.organizationId],
  )) as Array<{ workflow_id: string; type: string }>;
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
    status: failure ? 'failed' : 'running',
    input: req.input,
    metadata: { user_agent: null, ...req.metadata, timestamp: now.toISOString() },
    errorCode: failure?.code ?? null,
    errorMessage: failure?.message.replace(req.workflowId, row.workflow_id) ?? null,
    sourceKey: req.sourceKey ?? null,
    triggeredAt: now,
    completedAt: failure ? now : null,
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
  return te;
}
