/**
 * Owns inbound customer messages (`POST /v1/messages`). ONE statement
 * (`message.writes.ts`) records the customer (created on its first message per channel and
 * external id), the message, their events, and either
 *
 * - a reply: the message claims the open form wait of that customer's execution on the
 *   channel (see "Form waits" in execution.recorder.ts) and is linked to it; or
 * - everything the message starts: a firing of each matching active `message` trigger
 *   (trigger execution, `trigger.activated`) with its execution, and an execution for each
 *   active workflow of the channel whose own `configuration.trigger` keywords match and
 *   that no matching trigger already covers; at most one execution per workflow, each with
 *   its `workflow.started` event. The matching triggers and workflows are known before
 *   (`message-targets.ts`: mostly from memory, checked by the write), and the counters
 *   follow at commit (deferred triggers).
 *
 * A message with a `provider_message_id` already received on the channel is a redelivery:
 * nothing is recorded or started and the first message's outcome is returned. The write
 * finds it (no read before), and between two concurrent deliveries the unique index
 * decides: the loser's statement undoes itself.
 *
 * Only after the commit is the reply signalled (executions' `deliverReply`) / are the
 * executions started on Temporal. A crash after the commit loses nothing: the reconciler
 * starts unstarted executions and re-delivers unconfirmed replies (the workflow drops a
 * reply it already has, by message id; and a form whose timeout fires reads a claimed reply
 * from PostgreSQL).
 */
import { failpoint } from '../../failpoints';
import type { HeldClaim } from '../../http/idempotency';
import { busyWithConflict } from '../../errors';
import type { InboundServices } from './inbound-state';
import { dispatchExecution } from '../executions/execution.starter';
import { type InboundOutcome, reportConflicts } from './message.conflicts';
import { deliverReply } from '../executions/reply-delivery';
import { dispatchBurst } from '../debounce/burst-closer';
import type { MessageTargets } from './message-targets';
import type { CompanionWrite, InboundMessage } from './inbound-message';
import { CustomerExists, Redelivery, writeMessage } from './message.writes';
import { HANDED_OFF_REASON, recordIfHandedOff } from './handoff-intake';
import { isDeadlockOrSerialization, retrying } from '../../db/transaction';

export interface InboundResult {
  message_id: string;
  customer_id: string;
  /**
   * `resumed`: delivered to a waiting execution; `started`: executions started; `debounced`:
   * none started, it joined or opened a debounced burst (docs/executions.md); `skipped`:
   * it matched, but every workflow it matched was already running for the customer; `no_match`;
   * `ignored`: recorded only (`reason` says why: `handed_off`, inbound/handoff-intake.ts).
   */
  status: 'resumed' | 'started' | 'debounced' | 'queued' | 'skipped' | 'no_match' | 'ignored';
  reason?: typeof HANDED_OFF_REASON;
  executions: InboundOutcome[];
}

export type { InboundOutcome } from './message.conflicts';

/** What the first message with this id did: the outcome a redelivery answers with. */
const firstOutcome = (services: InboundServices, organizationId: string, msg: InboundMessage) =>
  outcomeOf(services, 'organization_id = ? and channel = ? and provider_message_id = ?', [organizationId, msg.channel, msg.provider_message_id]);

/**
 * The answer of an idempotent request whose first try committed its message (the recovery
 * point the write recorded) and died before its answer was stored: the outcome read back
 * from the message's rows. Its executions are started by the reconciler if that try did not.
 */
export async function resumeMessage(services: InboundServices, organizationId: string, point: { message_id?: string; status?: string }): Promise<InboundResult> {
  const result = point.message_id ? await outcomeOf(services, 'organization_id = ? and id = ?', [organizationId, point.message_id]) : undefined;
  if (!result) throw new Error('the recovery point names no message');
  if (point.status === 'ignored') return { ...result, status: 'ignored', reason: HANDED_OFF_REASON };
  return result;
}

async function outcomeOf(services: InboundServices, where: string, params: unknown[]): Promise<InboundResult | undefined> {
  const conn = services.orm.em.fork().getConnection();
  const [first] = await conn.execute<Array<{ id: string; customer_id: string; execution_id: string | null; reply_to_wait: string | null }>>(
    `select id, customer_id, execution_id, reply_to_wait from messages where ${where}`,
    params,
  );
  if (!first) return undefined;
  const result: InboundResult = { message_id: first.id, customer_id: first.customer_id, status: 'no_match', executions: [] };
  if (first.reply_to_wait !== null && first.execution_id !== null) {
    const [waiting] = await conn.execute<Array<{ workflow_id: string }>>('select workflow_id from executions where id = ?', [first.execution_id]);
    result.status = 'resumed';
    result.executions.push({ id: first.execution_id, workflow_id: waiting?.workflow_id ?? '', trigger_id: null, action: 'resumed' });
    return result;
  }
  const started = await conn.execute<Array<{ id: string; workflow_id: string; trigger_id: string | null }>>(
    'select id, workflow_id, trigger_id from executions where message_id = ? order by started_at, id',
    [first.id],
  );
  for (const e of started) result.executions.push({ id: e.id, workflow_id: e.workflow_id, trigger_id: e.trigger_id, action: 'started' });
  if (started.length > 0) result.status = 'started';
  const bursts = await conn.execute<Array<{ id: string; workflow_id: string; trigger_id: string | null; opened: boolean }>>(
    `select b.id, b.workflow_id, b.trigger_id, not exists (select 1 from debounce_burst_messages o where o.burst_id = b.id and o.seq < m.seq) as opened
       from debounce_burst_messages m join debounce_bursts b on b.id = m.burst_id where m.message_id = ? order by b.created_at, b.id`,
    [first.id],
  );
  for (const b of bursts) result.executions.push({ id: null, burst_id: b.id, workflow_id: b.workflow_id, trigger_id: b.trigger_id, action: 'debounced', opened: b.opened });
  if (bursts.length > 0 && result.status === 'no_match') result.status = 'debounced';
  return result;
}

const messageLanguage = (msg: InboundMessage) => (typeof msg.metadata?.language === 'string' ? msg.metadata.language : undefined);

/**
 * What the write needs, from memory or read: the route starts it beside the rate-limit
 * check (its `prefetch`). `fresh`: read even what is cached (the write found it changed).
 */
export function readTargets(services: InboundServices, organizationId: string, msg: InboundMessage, fresh = false): Promise<MessageTargets> {
  return services.messageTargets.targets(organizationId, msg, messageLanguage(msg), fresh);
}

/** How a reply that resumes a waiting execution reaches its run. */
export interface ReceiveOptions {
  /**
   * `background` (the default): the `customerReply` signal, sent after the commit without
   * waiting. `caller`: the caller hands the reply to the run itself and then stamps it
   * delivered (the voice hook's turn, an Update carrying the reply): a second Temporal call
   * for the same reply would cost the run a workflow task of its own. Unconfirmed, the
   * reconciler signals it as it does any reply (`redeliverReplies`).
   */
  replyDelivery?: 'background' | 'caller';
  /** The request's `Idempotency-Key` claim: the write records its recovery point in it. */
  claim?: HeldClaim;
  /** The caller's write that commits with the message, in its statement (the channel hook's customer window). */
  companion?: CompanionWrite;
}

/** `prefetched`: `readTargets` of this message, already started; read here when absent. */
export async function receiveMessage(
  services: InboundServices,
  organizationId: string,
  msg: InboundMessage,
  prefetched?: Promise<MessageTargets>,
  options: ReceiveOptions = {},
): Promise<{ duplicate: boolean; result: InboundResult }> {
  try {
    return { duplicate: false, result: await receiveNew(services, organizationId, msg, prefetched, options) };
  } catch (err) {
    if (!(err instanceof Redelivery)) throw err;
    const first = await firstOutcome(services, organizationId, msg);
    if (!first) throw new Error('redelivered message vanished');
    return { duplicate: true, result: first };
  }
}

const MESSAGE_ID_KEY = 'messages_provider_message_id_key';
/** The write's check: the organization's triggers or workflows changed since they were read. */
const TARGETS_CHANGED = 'WAT01';
/**
 * Read again and write again: the customer exists though its id was not known (another
 * process or a concurrent first message created it), the triggers or workflows changed
 * since the plan, or a deadlock.
 */
const writeConflict = (err: unknown) =>
  err instanceof CustomerExists || (err as { code?: string }).code === TARGETS_CHANGED || isDeadlockOrSerialization(err);

/**
 * Under `on_conflict: "replace"` the messages of one customer that arrive together are
 * written one after another (the customer's row), and each may find the one before it
 * newer than its snapshot and write again: the n-th in line can need n attempts. Five at
 * once exhausted the default four (503).
 */
const MESSAGE_WRITE_ATTEMPTS = 10;

async function receiveNew(
  services: InboundServices,
  organizationId: string,
  msg: InboundMessage,
  prefetched: Promise<MessageTargets> | undefined,
  options: ReceiveOptions,
): Promise<InboundResult> {
  const language = messageLanguage(msg);
  let first: Promise<MessageTargets> | undefined = prefetched ?? readTargets(services, organizationId, msg);
  const outcome = await retrying(writeConflict, async () => {
    // A retry after a write conflict reads again, not from memory: the conflict means the rows changed.
    const targets = await (first ?? readTargets(services, organizationId, msg, true));
    first = undefined;
    // A customer handed to a person: recorded, nothing started or resumed (docs/handoff.md).
    // Looked for only where the plan says a handoff may be in force: a handoff begun since
    // the plan was read changed its version, and the write below refuses it.
    const handedOff = targets.handoffs ? await recordIfHandedOff(services, organizationId, msg, language, options.claim, options.companion) : undefined;
    if (handedOff) return { handedOff };
    try {
      return { recorded: await writeMessage(services.hotPool, targets, { organizationId, msg, language, claim: options.claim, companion: options.companion }) };
    } catch (err) {
      if ((err as { constraint?: string }).constraint === MESSAGE_ID_KEY) throw new Redelivery();
      throw err;
    }
  }, MESSAGE_WRITE_ATTEMPTS).catch((err: unknown) => {
    // Conflicts that outlived the retries are contention, as a deadlock is: 503, never a 500.
    throw writeConflict(err) ? busyWithConflict() : err;
  });
  if (outcome.handedOff) {
    const { messageId, customerId } = outcome.handedOff;
    return { message_id: messageId, customer_id: customerId, status: 'ignored', reason: HANDED_OFF_REASON, executions: [] };
  }
  const recorded = outcome.recorded!;
  services.messageTargets.rememberCustomer(organizationId, msg, recorded.customerId);
  // Crash tests die here: everything above is committed, nothing is started or signalled yet.
  failpoint(services.config, 'message.after_commit');

  const result: InboundResult = { message_id: recorded.messageId, customer_id: recorded.customerId, status: 'no_match', executions: [] };
  // The answer does not wait on Temporal: the rows above are the promise, and the
  // reconciler keeps it if this process dies or Temporal is away (docs/performance.md).
  if (recorded.waiting) {
    const reply = { messageId: recorded.messageId, executionId: recorded.waiting.id, text: msg.message };
    if (options.replyDelivery !== 'caller') services.background.run('reply signal', () => deliverReply(services, reply), organizationId);
    result.status = 'resumed';
    result.executions.push({ id: recorded.waiting.id, workflow_id: recorded.waiting.workflow_id, trigger_id: null, action: 'resumed' });
    return result;
  }
  for (const pending of recorded.started) {
    services.background.run(
      'execution start',
      ({ backlogged }) => dispatchExecution(services, { ...pending, backlogged }, { batchStamp: services.startStamps }),
      organizationId,
      services.queuedStarts.watch(pending.executionId),
    );
    result.executions.push({ id: pending.executionId, workflow_id: pending.workflowInput.workflowId, trigger_id: pending.triggerId, action: 'started' });
  }
  if (result.executions.length > 0) result.status = 'started';
  for (const burst of recorded.bursts) {
    if (burst.opened) services.background.run('debounce burst start', () => dispatchBurst(services, {
      id: burst.id, organization_id: organizationId, workflow_id: burst.workflow_id, trigger_id: burst.trigger_id, customer_id: recorded.customerId, channel: msg.channel,
    }), organizationId);
    result.executions.push({ id: null, burst_id: burst.id, workflow_id: burst.workflow_id, trigger_id: burst.trigger_id, action: 'debounced', opened: burst.opened });
  }
  if (recorded.bursts.length > 0 && result.status === 'no_match') result.status = 'debounced';
  await reportConflicts(services, organizationId, recorded, result);
  return result;
}
