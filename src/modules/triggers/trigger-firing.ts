/**
 * Owns what happens when a trigger fires, whatever the source (inbound message, schedule,
 * webhook, API call): whether a message trigger matches a message, and recording a firing
 * — trigger execution (its counters follow at commit), `trigger.activated` and the workflow
 * execution itself (the executions module's `recordExecution`) in ONE transaction — and
 * start the execution on Temporal after the commit (`dispatchExecution`; the executions
 * reconciler starts it if this process dies first). A firing is therefore never recorded
 * without its execution, nor an execution of a trigger without its firing.
 *
 * `recordTriggerFiring(tx, req)` is that recording step on the caller's transaction;
 * `fireTrigger` wraps it in a transaction of its own. An inbound message writes its firings
 * in its own single statement (inbound/message.writes.ts) with this module's
 * `insertFiringRowsSql`, `firingMetadata` and `firingEventData`.
 *
 * A firing that cannot start an execution (workflow not active) is recorded as a `failed`
 * trigger execution with its error; `fireTrigger` then throws that error.
 *
 * A firing for a customer is subject to its workflow's per-customer concurrency rule
 * (executions/execution.slot.ts): skipped (recorded `skipped` with the reason as its error
 * code, no execution), queued (its execution starts when the database promotes it), or
 * replacing the running execution (whose Temporal run is cancelled after the commit).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, DomainError, notFound } from '../../errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { dispatchExecution, type PendingExecution, recordExecution } from '../executions/execution.starter';
import { recordSlottedExecution, type SlotOutcome } from '../executions/execution.slot';
import { sendTemporalCancel } from '../executions/execution.canceller';
import { TriggerExecution } from './trigger.entity';
import type { MessageTriggerConfig } from './trigger.schemas';
import { transactionalRetrying } from '../../db/transaction';
import type { HeldClaim } from '../../http/idempotency';
import { isNonTextMessageText } from '../../../temporal/executions.shared';

/** An inbound message, as a message trigger matches it. */
export interface MessageMatchQuery {
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
  // A placeholder (`[location]`) is not what the customer wrote: it matches no keyword.
  if (isNonTextMessageText(text)) return false;
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
 * Whether an active `message` trigger matches the message: keywords (case_sensitive,
 * exact_match), language (when both sides carry one) and channel (`configuration.channel`,
 * else the trigger's channel).
 */
export function messageTriggerMatches(t: { channel: string | null; configuration: MessageTriggerConfig }, q: MessageMatchQuery): boolean {
  const config = t.configuration;
  return (config.channel ?? t.channel) === q.channel && languageMatches(config.language, q.language) && messageMatches(config, q.text);
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
  /** The inbound message that started it (a debounced burst's first), for conversation journeys. */
  messageId?: string;
  /** The fire request's `Idempotency-Key` claim: the firing's id is its recovery point, committed with it. */
  claim?: HeldClaim;
}

export interface FireTriggerResult {
  triggerExecutionId: string;
  /** Null when the workflow's concurrency rule skipped the start (the firing is `skipped`). */
  executionId: string | null;
}

export const triggerNotActive = (id: string) => conflict('TRIGGER_NOT_ACTIVE', `Trigger ${id} is not active; activate or resume it first`);

const workflowNotActive = (id: string) => conflict('WORKFLOW_NOT_ACTIVE', `Workflow ${id} is not active; a trigger fires only for an active workflow`);

/** A firing recorded in the caller's transaction, not yet committed. */
export interface RecordedFiring {
  triggerExecutionId: string;
  /** The trigger's workflow (the trigger row is the truth, not the caller's copy). */
  workflowId: string;
  /** The execution to start after the commit; null when the firing failed. */
  pending: PendingExecution | null;
  /**
   * What the workflow's concurrency rule did (a firing with a customer): a `queued` or
   * `skipped` execution is not started after the commit; a `started` one may have replaced
   * executions, whose Temporal runs are cancelled after the commit. Undefined: no rule (no customer).
   */
  slot?: SlotOutcome;
  /** Why no execution could start (409 WORKFLOW_NOT_ACTIVE), recorded on the failed firing. */
  error: DomainError | null;
}

/**
 * Records one firing of an active trigger, with its workflow execution, in `tx`. Throws
 * 404 TRIGGER_NOT_FOUND / 409 TRIGGER_NOT_ACTIVE before writing anything (so the caller's
 * transaction stays usable); a workflow that cannot run is not thrown but recorded as a
 * failed firing and returned in `error`, so the caller's commit keeps it.
 */
export async function recordTriggerFiring(tx: EntityManager, req: FireTriggerRequest): Promise<RecordedFiring> {
  const fired = await checkTriggerCanFire(tx, req);
  let pending: PendingExecution | null = null;
  let slot: SlotOutcome | undefined;
  let error: DomainError | null = null;
  const start = {
    organizationId: req.organizationId, workflowId: fired.workflow_id, triggerId: req.triggerId, channel: req.channel, input: req.input,
    ...(req.messageId ? { messageId: req.messageId } : {}),
  };
  try {
    // A firing for a customer is subject to its workflow's per-customer concurrency rule.
    if (req.customerId) ({ pending, slot } = await recordSlottedExecution(tx, { ...start, customerId: req.customerId }));
    else pending = await recordExecution(tx, start);
  } catch (err) {
    // Both check the workflow before they write anything.
    if (!(err instanceof DomainError) || (err.code !== 'WORKFLOW_NOT_ACTIVE' && err.code !== 'WORKFLOW_NOT_FOUND')) throw err;
    error = workflowNotActive(fired.workflow_id);
  }
  const skipped = slot?.action === 'skipped' ? (slot.queueFull ? QUEUE_FULL : ALREADY_RUNNING) : null;
  const te = addFiring(tx, req, fired, skipped ? null : pending?.executionId ?? null, error, skipped);
  return { triggerExecutionId: te.id, workflowId: fired.workflow_id, pending: skipped ? null : pending, error, ...(slot ? { slot } : {}) };
}

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
    if (previous?.executionId || previous?.status === 'skipped') return { triggerExecutionId: previous.id, executionId: previous.executionId };
    if (previous) throw conflict(previous.errorCode ?? 'TRIGGER_EXECUTION_FAILED', previous.errorMessage ?? 'Trigger execution failed');
  }

  const recorded = await transactionalRetrying(em, async (tx) => {
    const firing = await recordTriggerFiring(tx, req);
    await req.claim?.recordIn(tx, { trigger_execution_id: firing.triggerExecutionId });
    return firing;
  });
  if (recorded.error) throw recorded.error;
  const pending = recorded.pending;
  if (!pending) return { triggerExecutionId: recorded.triggerExecutionId, executionId: null };
  if (recorded.slot?.action === 'started') {
    for (const id of recorded.slot.replaced) services.background.run('replaced execution cancel', () => sendTemporalCancel(services, id));
  }
  // A queued execution is started once the database promotes it (the reconciler). The
  // firing is committed: a start or its stamp failing now is the reconciler's to finish,
  // never an error that a client would answer by firing again.
  if (recorded.slot?.action !== 'queued') {
    await dispatchExecution(services, pending).catch((err: unknown) =>
      services.logger.warn({ err, execution_id: pending.executionId }, 'the start of a committed firing failed; the reconciler starts it'),
    );
  }
  return { triggerExecutionId: recorded.triggerExecutionId, executionId: pending.executionId };
}

/**
 * Checks the trigger can fire; throws (writing nothing) when it cannot. Its
 * `execution_count` and `last_triggered` follow from the firing's row at commit (a deferred
 * trigger, Migration20261128000100_deferred_counters), so concurrent firings never queue on
 * the trigger's row mid-transaction. A firing that read the trigger active just before a
 * concurrent pause committed is recorded: it happened before the pause.
 */
async function checkTriggerCanFire(tx: EntityManager, req: FireTriggerRequest): Promise<{ workflow_id: string; type: string; now: Date }> {
  const rows = await tx.execute<Array<{ workflow_id: string; type: string; status: string }>>(
    'select workflow_id, type, status from triggers where id = ? and organization_id = ? and deleted_at is null',
    [req.triggerId, req.organizationId],
  );
  const row = rows[0];
  if (!row) throw notFound('TRIGGER_NOT_FOUND', 'Trigger');
  if (row.status !== 'active') throw triggerNotActive(req.triggerId);
  return { workflow_id: row.workflow_id, type: row.type, now: new Date() };
}

/**
 * Adds the firing (running; failed with `failure`; or skipped by the concurrency rule, with
 * the reason as its error code) and its `trigger.activated` event to `tx`.
 */
function addFiring(
  tx: EntityManager,
  req: FireTriggerRequest,
  fired: { workflow_id: string; type: string; now: Date },
  executionId: string | null,
  failure: DomainError | null,
  skipped: SkipReason | null,
): TriggerExecution {
  const { now } = fired;
  const te = tx.create(TriggerExecution, {
    id: newId('triggerExecution'),
    organizationId: req.organizationId,
    triggerId: req.triggerId,
    workflowId: fired.workflow_id,
    executionId,
    customerId: req.customerId ?? null,
    channel: req.channel,
    status: failure ? 'failed' : skipped ? 'skipped' : 'running',
    input: req.input,
    metadata: firingMetadata(req.metadata, now),
    errorCode: failure?.code ?? skipped,
    errorMessage: failure?.message ?? null,
    sourceKey: req.sourceKey ?? null,
    triggeredAt: now,
    completedAt: failure || skipped ? now : null,
  });
  recordEvent(tx, {
    organizationId: req.organizationId,
    type: 'trigger.activated',
    occurredAt: now,
    data: firingEventData({
      triggerId: req.triggerId,
      firingId: te.id,
      type: fired.type,
      workflowId: fired.workflow_id,
      channel: req.channel,
      customerId: req.customerId ?? null,
      now,
    }),
  });
  return te;
}

/** A message trigger's firing as a JSON object (the table's column names), for `insertFiringRowsSql`. */
export interface FiringRow {
  id: string;
  organization_id: string;
  trigger_id: string;
  workflow_id: string;
  execution_id: string;
  customer_id: string;
  channel: string;
  status: 'running';
  input: Record<string, unknown>;
  metadata: Record<string, unknown>;
  triggered_at: Date;
}

const FIRING_COLUMNS = 'id, organization_id, trigger_id, workflow_id, execution_id, customer_id, channel, status, input, metadata, triggered_at';

/** Why a firing started nothing because its workflow's execution for the customer is still running. */
export const ALREADY_RUNNING = 'already_running';
/** Why a firing started nothing under `on_conflict: "queue"`: `QUEUE_LIMIT` executions already wait for the slot. */
export const QUEUE_FULL = 'queue_full';
export type SkipReason = typeof ALREADY_RUNNING | typeof QUEUE_FULL;

/**
 * The INSERT of the firings an inbound message records in its own statement
 * (inbound/message.writes.ts): the rows of the JSON array `rowsJson` (`FiringRow`s; a SQL
 * expression), when `when` holds. `startedIds` is a relation of the execution ids the
 * statement inserted (a CTE's name): a firing whose execution is not among them was skipped
 * by the workflow's concurrency rule and is recorded `skipped` (completed at once, no
 * execution) with its reason: `queue_full` when its execution was to queue (the JSON array
 * `queueIds`), else `already_running`.
 */
export const insertFiringRowsSql = (rowsJson: string, when: string, startedIds: string, queueIds: string) =>
  `insert into trigger_executions (${FIRING_COLUMNS}, error_code, completed_at)
      select r.id, r.organization_id, r.trigger_id, r.workflow_id, case when s.id is null then null else r.execution_id end,
             r.customer_id, r.channel, case when s.id is null then 'skipped' else r.status end, r.input, r.metadata, r.triggered_at,
             case when s.id is null then
               case when r.execution_id in (select jsonb_array_elements_text(${queueIds}::jsonb)) then '${QUEUE_FULL}' else '${ALREADY_RUNNING}' end
             end,
             case when s.id is null then r.triggered_at end
        from jsonb_populate_recordset(null::trigger_executions, ${rowsJson}::jsonb) r
        left join ${startedIds} s on s.id = r.execution_id
       where ${when}`;

/** A firing's `metadata`: the source's, with the firing time. */
export function firingMetadata(metadata: Record<string, unknown> | undefined, now: Date): Record<string, unknown> {
  return { user_agent: null, ...metadata, timestamp: now.toISOString() };
}

/** The data of a firing's `trigger.activated` event. */
export function firingEventData(f: { triggerId: string; firingId: string; type: string; workflowId: string; channel: string; customerId: string | null; now: Date }) {
  return {
    trigger_id: f.triggerId,
    trigger_execution_id: f.firingId,
    trigger_type: f.type,
    workflow_id: f.workflowId,
    channel: f.channel,
    customer_id: f.customerId,
    triggered_at: f.now.toISOString(),
  };
}
