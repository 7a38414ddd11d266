/**
 * Owns debounced bursts (docs/executions.md, "Debounced bursts"): the tables
 * `debounce_bursts` and `debounce_burst_messages`, the durable start of each burst's
 * debouncer workflow, and the close of a burst into its one execution.
 *
 * - An inbound message joins or opens bursts inside its own statement
 *   (`joinOrOpenBurstsCtes`, debounce.writes.ts, composed by inbound/message.writes.ts).
 *   A burst it opened is a durable start (`BURST_START`): committed first, its debouncer
 *   (`debounceBurstWorkflow`, id `debounce:bst_…`) started after the commit, and started
 *   by the worker's reconciler when that start was cut off.
 * - The debouncer calls `closeBurstIfDue` until it closes the burst: one transaction that
 *   locks the customer's row, then the burst's (the order every message statement takes
 *   them in), and, when the database's clock says the burst is due, closes it and records
 *   its execution through the same path as every customer's start: a trigger's firing
 *   (`recordTriggerFiring`) or a workflow's own start (`recordSlottedExecution`), so the
 *   concurrency rule, the events and the durable start of the execution apply. A message
 *   whose statement waited on those locks finds the burst closed and opens a new one if it
 *   matches.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../errors';
import type { Services } from '../../services';
import { transactionalRetrying } from '../../db/transaction';
import { SearchAttributeKeys } from '../../../temporal/shared';
import { organizationPriority } from '../../../temporal/fairness.shared';
import { staticDetails, summaryLine } from '../../../temporal/summaries.shared';
import { type BurstCheck, DEBOUNCE_BURST_WORKFLOW_TYPE, debounceBurstWorkflowId, type DebounceBurstInput } from '../../../temporal/debounce.shared';
import { linkBurstMessages } from '../conversations/conversation.writes';
import { sendTemporalCancel } from '../executions/execution.canceller';
import { recordSlottedExecution, type SlotOutcome } from '../executions/execution.slot';
import { dispatchExecution, type PendingExecution } from '../executions/execution.starter';
import { claimOneSql, dispatchStart, type StartKind } from '../starts/durable-start';
import { recordTriggerFiring } from '../triggers/trigger-firing';

/** The committed row a debouncer is started for (also what the reconciler claims). */
export interface BurstRow {
  id: string;
  organization_id: string;
  workflow_id: string;
  trigger_id: string | null;
  customer_id: string;
  channel: string;
}

/** Bursts as a durable start kind: open bursts whose debouncer was never confirmed started. */
export const BURST_START: StartKind<BurstRow> = {
  table: 'debounce_bursts',
  workflowType: DEBOUNCE_BURST_WORKFLOW_TYPE,
  workflowId: debounceBurstWorkflowId,
  // One debouncer per burst: a second start finds the first run, open or closed, and leaves it be.
  conflictPolicy: 'FAIL',
  idOf: (row) => row.id,
  options: (row, services) => ({
    args: [{ burstId: row.id, organizationId: row.organization_id } satisfies DebounceBurstInput],
    // Found in the Temporal UI by the same attributes as the executions it becomes.
    searchAttributes: [
      { key: SearchAttributeKeys.organizationId, value: row.organization_id },
      { key: SearchAttributeKeys.workflowId, value: row.workflow_id },
      { key: SearchAttributeKeys.customerId, value: row.customer_id },
      { key: SearchAttributeKeys.channel, value: row.channel },
      ...(row.trigger_id ? [{ key: SearchAttributeKeys.triggerId, value: row.trigger_id }] : []),
    ],
    staticSummary: summaryLine('debounce burst', row.id),
    staticDetails: staticDetails(
      [['Burst', row.id], ['Workflow', row.workflow_id], ['Trigger', row.trigger_id], ['Customer', row.customer_id], ['Organization', row.organization_id]],
      services.config.BASE_URL,
    ),
    priority: organizationPriority(row.organization_id),
  }),
  // The partial index debounce_bursts_unstarted_idx holds exactly these rows.
  claimSql: claimOneSql('debounce_bursts', `status = 'open' and temporal_started_at is null and created_at < now() - (? * interval '1 millisecond')`, 'created_at'),
  fromRow: (row: BurstRow) => ({
    id: row.id, organization_id: row.organization_id, workflow_id: row.workflow_id, trigger_id: row.trigger_id, customer_id: row.customer_id, channel: row.channel,
  }),
};

/** Starts the debouncer of a burst a message just opened (committed); the reconciler retries a cut-off start. */
export async function dispatchBurst(services: Services, burst: BurstRow): Promise<boolean> {
  return await dispatchStart(services, BURST_START, burst);
}

interface LockedBurst extends BurstRow {
  status: 'open' | 'closed';
  execution_id: string | null;
  /** How long until the burst is due (≤ 0: due), by the database's clock. */
  wait_ms: number;
}

/** One look at a burst, and what its close leaves to do after the commit. */
interface Look {
  check: BurstCheck;
  /** The execution the close recorded, to start (`startNow`) after the commit. */
  pending?: PendingExecution | null;
  startNow?: boolean;
  /** Executions a `replace` start cancelled: their Temporal runs are cancelled after the commit. */
  replaced?: string[];
}

/** How the close went: `started`, `queued`, or `skipped` (the concurrency rule), or no execution because the trigger or workflow stopped. */
type BurstOutcome = 'started' | 'queued' | 'skipped' | 'not_active';

/** Why a start could not be recorded that closes the burst without an execution (the trigger or workflow was paused, deactivated or deleted since). */
const NOT_STARTABLE = new Set(['TRIGGER_NOT_FOUND', 'TRIGGER_NOT_ACTIVE', 'WORKFLOW_NOT_FOUND', 'WORKFLOW_NOT_ACTIVE']);

/**
 * One look at a burst (the debouncer's activity): closed already, not due yet (the wait
 * left), or due: closed now with its execution, which is started on Temporal after the
 * commit (the reconciler starts it if this process dies first). Safe to repeat: a retry
 * after a close finds the burst closed.
 */
export async function closeBurstIfDue(services: Services, input: DebounceBurstInput): Promise<BurstCheck> {
  const em = services.orm.em.fork() as EntityManager;
  const result = await transactionalRetrying(em, async (tx): Promise<Look> => {
    const [found] = await tx.execute<Array<{ customer_id: string }>>('select customer_id from debounce_bursts where id = ? and organization_id = ?', [
      input.burstId,
      input.organizationId,
    ]);
    if (!found) return { check: { closed: true, executionId: null } };
    // The customer's row before the burst's, as a message statement takes them: no deadlock between a join and the close.
    await tx.execute('select 1 from customers where id = ? for no key update', [found.customer_id]);
    const [burst] = await tx.execute<LockedBurst[]>(
      `select id, organization_id, workflow_id, trigger_id, customer_id, channel, status, execution_id,
              ceil(extract(epoch from least(last_at + debounce_ms * interval '1 millisecond', first_at + max_wait_ms * interval '1 millisecond')
                                      - clock_timestamp()) * 1000)::int as wait_ms
         from debounce_bursts where id = ? for update`,
      [input.burstId],
    );
    // The debouncer runs, so its start happened: stamped here too, since a start cut off at
    // its timeout may have reached Temporal all the same, and a closed burst is never
    // reconciled (as an execution's finish stamps its start).
    await tx.execute('update debounce_bursts set temporal_started_at = clock_timestamp() where id = ? and temporal_started_at is null', [input.burstId]);
    if (burst!.status === 'closed') return { check: { closed: true, executionId: burst!.execution_id } };
    if (burst!.wait_ms > 0) return { check: { closed: false, waitMs: burst!.wait_ms } };
    return await closeBurst(tx, burst!);
  });
  if (result.pending) {
    for (const id of result.replaced ?? []) services.background.run('replaced execution cancel', () => sendTemporalCancel(services, id));
    // A queued execution is started once the database promotes it (the reconciler).
    if (result.startNow) await dispatchExecution(services, result.pending);
  }
  return result.check;
}

/** Closes a due burst in `tx` and records its execution: the messages' texts joined by newlines in arrival order. */
async function closeBurst(tx: EntityManager, burst: LockedBurst): Promise<Look> {
  const messages = await tx.execute<Array<{ message_id: string; text: string }>>('select message_id, text from debounce_burst_messages where burst_id = ? order by seq', [
    burst.id,
  ]);
  const messageIds = messages.map((m) => m.message_id);
  const text = messages.map((m) => m.text).join('\n');
  const start = { organizationId: burst.organization_id, workflowId: burst.workflow_id, channel: burst.channel, customerId: burst.customer_id, messageId: messageIds[0]! };
  let pending: PendingExecution | null = null;
  let slot: SlotOutcome | undefined;
  let outcome: BurstOutcome;
  try {
    if (burst.trigger_id) {
      // The input a message trigger's execution gets (inbound/message.writes.ts), with the burst's messages.
      const input = { message: text, message_ids: messageIds, customer_id: burst.customer_id, channel: burst.channel };
      const fired = await recordTriggerFiring(tx, { ...start, triggerId: burst.trigger_id, input, metadata: { message_id: messageIds[0], message_ids: messageIds, burst_id: burst.id } });
      if (fired.error) throw fired.error;
      ({ pending } = fired);
      slot = fired.slot;
    } else {
      ({ pending, slot } = await recordSlottedExecution(tx, { ...start, input: { message: text, message_ids: messageIds } }));
    }
    outcome = slot?.action ?? 'started';
  } catch (err) {
    if (!(err instanceof DomainError) || !NOT_STARTABLE.has(err.code)) throw err;
    outcome = 'not_active';
  }
  const executionId = outcome === 'started' || outcome === 'queued' ? pending!.executionId : null;
  await tx.execute(`update debounce_bursts set status = 'closed', closed_at = clock_timestamp(), outcome = ?, execution_id = ? where id = ?`, [outcome, executionId, burst.id]);
  if (executionId) await linkBurstMessages(tx, executionId, messageIds);
  return {
    check: { closed: true, executionId },
    pending: executionId ? pending : null,
    startNow: outcome === 'started',
    replaced: slot?.action === 'started' ? slot.replaced : [],
  };
}
