/**
 * Owns inbound customer messages (`POST /v1/messages`). ONE transaction records the
 * customer (the customers module's `recordInboundCustomer`: created on its first message per
 * channel and external id), the message, their events, and either
 *
 * - a reply: the message claims the open form wait of that customer's execution on the
 *   channel (see "Form waits" in execution.recorder.ts) and is linked to it; or
 * - everything the message starts: a firing of each matching active `message` trigger (the
 *   triggers module's `recordTriggerFiring`: trigger execution, `trigger.activated`) with
 *   its execution, and an execution for each active workflow of the channel whose own
 *   `configuration.trigger` keywords match and that no matching trigger already covers; at
 *   most one execution per workflow, each with its `workflow.started` event. The matching
 *   triggers and workflows are read beside the transaction, not in it, and the counters
 *   follow at commit (deferred triggers): the transaction holds its locks for as few round
 *   trips as possible (docs/performance.md).
 *
 * A message with a `provider_message_id` already received on the channel is a redelivery:
 * nothing is recorded or started and the first message's outcome is returned (the unique
 * index decides between two concurrent deliveries; the loser's transaction rolls back).
 *
 * Only after the commit is the reply signalled (executions' `deliverReply`) / are the
 * executions started on Temporal. A crash after the commit loses nothing: the reconciler
 * starts unstarted executions and re-delivers unconfirmed replies (the workflow drops a
 * reply it already has, by message id; and a form whose timeout fires reads a claimed reply
 * from PostgreSQL).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { failpoint } from '../../failpoints';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordInboundCustomer } from '../customers/customer.service';
import { recordEvent } from '../events/outbox';
import { dispatchExecution, type PendingExecution, recordExecution, type RunnableWorkflow } from '../executions/execution.starter';
import { type ClaimedWait, claimWait, deliverReply } from '../executions/reply-delivery';
import { findMatchingMessageTriggers, messageMatches, recordTriggerFiring } from '../triggers/trigger-firing';
import { transactionalRetrying } from '../../db/transaction';

export interface InboundMessage {
  channel: string;
  customer_id: string;
  message: string;
  metadata?: Record<string, unknown>;
  customer?: { name?: string };
  /** The provider's id of the message: a second message with it on the channel is a redelivery. */
  provider_message_id?: string;
}

export interface InboundResult {
  message_id: string;
  customer_id: string;
  /** `resumed`: delivered to a waiting execution; `started`: executions started; `no_match`. */
  status: 'resumed' | 'started' | 'no_match';
  executions: Array<{ id: string; workflow_id: string; trigger_id: string | null; action: 'started' | 'resumed' }>;
}

interface Recorded {
  messageId: string;
  customerId: string;
  waiting: ClaimedWait | undefined;
  started: Array<{ pending: PendingExecution; triggerId: string | null }>;
}

/**
 * What a message that is not a reply may start: the matching active `message` triggers and
 * the active workflows of the channel whose own `configuration.trigger` keywords match,
 * with what starting each workflow needs. Read outside the message's transaction (nothing
 * here is written or locked), so the transaction itself only writes.
 */
interface MessageTargets {
  triggers: Array<{ triggerId: string; workflowId: string }>;
  /** Workflows matched by their own keywords, oldest first. */
  configured: string[];
  workflows: Map<string, RunnableWorkflow>;
}

async function findMessageTargets(services: Services, organizationId: string, msg: InboundMessage, language: string | undefined): Promise<MessageTargets> {
  const em = services.orm.em.fork() as EntityManager;
  const triggers = await findMatchingMessageTriggers(em, { organizationId, channel: msg.channel, text: msg.message, ...(language ? { language } : {}) });
  const rows = await em.getConnection().execute<Array<RunnableWorkflow & { channel: string }>>(
    `select id, name, status, revision, configuration, channel from workflows
      where organization_id = ? and status = 'active' and deleted_at is null
        and (channel = ? or id in (select jsonb_array_elements_text(?::jsonb)))
      order by created_at, id`,
    [organizationId, msg.channel, JSON.stringify(triggers.map((t) => t.workflowId))],
  );
  const configured = rows
    .filter((w) => {
      const trigger = w.channel === msg.channel ? w.configuration?.trigger : undefined;
      return trigger !== undefined && messageMatches({ keywords: trigger.keywords, case_sensitive: false, exact_match: false } as never, msg.message);
    })
    .map((w) => w.id);
  return { triggers, configured, workflows: new Map(rows.map((w) => [w.id, w])) };
}

/**
 * Records, in `tx`, the firings and executions a message that is not a reply starts. One
 * execution per workflow: the oldest matching trigger gets the attribution, then workflows
 * matched by their own keywords. Everything was read before the transaction, so this only
 * adds rows to its unit of work; a trigger or workflow changed in between acts as it was
 * read, as if the message had arrived a moment earlier.
 */
async function recordStarts(
  tx: EntityManager,
  targets: MessageTargets,
  m: { organizationId: string; customerId: string; messageId: string; msg: InboundMessage; language: string | undefined },
): Promise<Recorded['started']> {
  const { organizationId, customerId, messageId, msg, language } = m;
  const started: Recorded['started'] = [];
  const covered = new Set<string>();
  for (const match of targets.triggers) {
    if (covered.has(match.workflowId)) continue;
    const workflow = targets.workflows.get(match.workflowId);
    const fired = await recordTriggerFiring(
      tx,
      {
        organizationId,
        triggerId: match.triggerId,
        workflowId: match.workflowId,
        channel: msg.channel,
        customerId,
        input: { message: msg.message, customer_id: customerId, channel: msg.channel },
        metadata: { message_id: messageId, ...(language ? { language } : {}) },
      },
      { messageId, matched: { workflowId: match.workflowId }, ...(workflow ? { workflow } : {}) },
    );
    covered.add(fired.workflowId);
    if (fired.pending) started.push({ pending: fired.pending, triggerId: match.triggerId });
  }
  for (const workflowId of targets.configured) {
    if (covered.has(workflowId)) continue;
    covered.add(workflowId);
    const pending = await recordExecution(
      tx,
      { organizationId, workflowId, customerId, channel: msg.channel, input: { message: msg.message } },
      { messageId, workflow: targets.workflows.get(workflowId)! },
    );
    started.push({ pending, triggerId: null });
  }
  return started;
}

/** The provider message id was already received on the channel: the transaction rolls back. */
class Redelivery extends Error {}

/** What the first message with this id did: the outcome a redelivery answers with. */
async function firstOutcome(services: Services, organizationId: string, msg: InboundMessage): Promise<InboundResult | undefined> {
  const conn = services.orm.em.fork().getConnection();
  const [first] = await conn.execute<Array<{ id: string; customer_id: string; execution_id: string | null; reply_to_wait: string | null }>>(
    'select id, customer_id, execution_id, reply_to_wait from messages where organization_id = ? and channel = ? and provider_message_id = ?',
    [organizationId, msg.channel, msg.provider_message_id],
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
  return result;
}

export async function receiveMessage(
  services: Services,
  organizationId: string,
  msg: InboundMessage,
): Promise<{ duplicate: boolean; result: InboundResult }> {
  if (msg.provider_message_id !== undefined) {
    const first = await firstOutcome(services, organizationId, msg);
    if (first) return { duplicate: true, result: first };
  }
  try {
    return { duplicate: false, result: await receiveNew(services, organizationId, msg) };
  } catch (err) {
    if (!(err instanceof Redelivery)) throw err;
    const first = await firstOutcome(services, organizationId, msg);
    if (!first) throw new Error('redelivered message vanished');
    return { duplicate: true, result: first };
  }
}

async function receiveNew(services: Services, organizationId: string, msg: InboundMessage): Promise<InboundResult> {
  const language = typeof msg.metadata?.language === 'string' ? msg.metadata.language : undefined;
  // Read before the transaction, not beside it: a transaction holding its connection while
  // it waits for a second one starves the pool under a burst (every connection held, every
  // read waiting). A reply does not use it; two reads are cheaper than a held transaction.
  const targets = await findMessageTargets(services, organizationId, msg, language);
  const recorded: Recorded = await transactionalRetrying(services.orm.em as EntityManager, async (tx) => {
    const customerId = await recordInboundCustomer(tx, organizationId, { channel: msg.channel, externalId: msg.customer_id, name: msg.customer?.name ?? null });
    const messageId = newId('message');
    const waiting = await claimWait(tx, organizationId, customerId, msg.channel);
    recordEvent(tx, {
      organizationId,
      type: 'message.received',
      data: {
        message_id: messageId,
        customer_id: customerId,
        external_id: msg.customer_id,
        channel: msg.channel,
        text: msg.message,
        metadata: msg.metadata ?? {},
        ...(msg.provider_message_id !== undefined ? { provider_message_id: msg.provider_message_id } : {}),
        execution_id: waiting?.id ?? null,
      },
    });
    const started = waiting ? [] : await recordStarts(tx, targets, { organizationId, customerId, messageId, msg, language });
    // A reply is linked to the execution it answers (and delivered after the commit); a
    // message that started executions to the first of them, with nothing to deliver. One
    // insert either way, so its analytics count lands on that workflow at once.
    const executionId = waiting?.id ?? started[0]?.pending.executionId ?? null;
    const inserted = await tx.execute<Array<{ id: string }>>(
      `insert into messages (id, organization_id, customer_id, channel, direction, text, metadata, language, execution_id, reply_to_wait, provider_message_id, delivered_at)
       values (?, ?, ?, ?, 'inbound', ?, ?::jsonb, ?, ?, ?, ?, ${started.length > 0 ? 'now()' : 'null'})
       on conflict (organization_id, channel, provider_message_id) where provider_message_id is not null do nothing
       returning id`,
      [
        messageId,
        organizationId,
        customerId,
        msg.channel,
        msg.message,
        JSON.stringify(msg.metadata ?? {}),
        language ?? null,
        executionId,
        waiting?.waiting_key ?? null,
        msg.provider_message_id ?? null,
      ],
    );
    // A concurrent delivery of the same provider message committed first: undo ours.
    if (inserted.length === 0) throw new Redelivery();
    return { messageId, customerId, waiting, started };
  });
  // Crash tests die here: everything above is committed, nothing is started or signalled yet.
  failpoint(services.config, 'message.after_commit');

  const result: InboundResult = { message_id: recorded.messageId, customer_id: recorded.customerId, status: 'no_match', executions: [] };
  // The answer does not wait on Temporal: the rows above are the promise, and the
  // reconciler keeps it if this process dies or Temporal is away (docs/performance.md).
  if (recorded.waiting) {
    const reply = { messageId: recorded.messageId, executionId: recorded.waiting.id, text: msg.message };
    services.background.run('reply signal', () => deliverReply(services, reply));
    result.status = 'resumed';
    result.executions.push({ id: recorded.waiting.id, workflow_id: recorded.waiting.workflow_id, trigger_id: null, action: 'resumed' });
    return result;
  }
  for (const { pending, triggerId } of recorded.started) {
    services.background.run('execution start', () => dispatchExecution(services, pending));
    result.executions.push({ id: pending.executionId, workflow_id: pending.workflowInput.workflowId, trigger_id: triggerId, action: 'started' });
  }
  if (result.executions.length > 0) result.status = 'started';
  return result;
}
