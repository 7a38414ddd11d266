/**
 * Owns inbound customer messages (`POST /v1/messages`). One transaction records the
 * customer (created on its first message per channel and external id), the message, their
 * events, and either routes the message to the customer's execution that waits for input
 * on that channel, or records one execution per workflow the message starts:
 *
 * - active `message` triggers that match (the triggers module decides), at most one per
 *   workflow, fired through `fireTrigger` after the commit (it records its own firing);
 * - active workflows of the channel whose own `configuration.trigger` keywords match and
 *   that no matching trigger already covers, recorded in this same transaction.
 *
 * After the commit the reply is signalled / the executions are started. A crash after the
 * commit loses nothing: the reconciler starts unstarted executions and re-delivers
 * unaccepted replies (the workflow drops a reply it already has, by message id).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowNotFoundError } from '@temporalio/client';
import { AppError } from '../../http/errors';
import { newId } from '../../ids';
import type { Services } from '../../services';
import { recordEvent } from '../events/outbox';
import { findMatchingMessageTriggers, fireTrigger, messageMatches } from '../triggers/trigger-firing';
import { Workflow } from '../workflows/workflow.entity';
import { customerReplySignal, executionWorkflowId } from '../../../temporal/executions.shared';
import { dispatchExecution, type PendingExecution, recordExecution } from './execution.starter';

export interface InboundMessage {
  channel: string;
  customer_id: string;
  message: string;
  metadata?: Record<string, unknown>;
  customer?: { name?: string };
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
  waiting: { id: string; workflow_id: string } | undefined;
  pending: PendingExecution[];
  triggerMatches: Array<{ triggerId: string; workflowId: string }>;
}

async function upsertCustomer(tx: EntityManager, organizationId: string, msg: InboundMessage): Promise<string> {
  const name = msg.customer?.name ?? null;
  const [row] = await tx.execute<Array<{ id: string; created: boolean; old_name: string | null; name: string | null; external_id: string }>>(
    `with old as (select id, name from customers where organization_id = ? and channel = ? and external_id = ?)
     insert into customers (id, organization_id, channel, external_id, name, message_count, last_message_at)
     values (?, ?, ?, ?, ?, 1, now())
     on conflict (organization_id, channel, external_id) do update
       set message_count = customers.message_count + 1, last_message_at = now(),
           name = coalesce(excluded.name, customers.name),
           updated_at = case when excluded.name is not null and excluded.name is distinct from customers.name then now() else customers.updated_at end
     returning id, (xmax = 0) as created, (select name from old) as old_name, name, external_id`,
    [organizationId, msg.channel, msg.customer_id, newId('customer'), organizationId, msg.channel, msg.customer_id, name],
  );
  if (!row) throw new Error('customer upsert returned nothing');
  const data = { customer_id: row.id, external_id: row.external_id, channel: msg.channel, name: row.name };
  if (row.created) recordEvent(tx, { organizationId, type: 'customer.created', data });
  else if (name !== null && row.old_name !== name) {
    recordEvent(tx, { organizationId, type: 'customer.updated', data: { ...data, changed: ['name'] } });
  }
  return row.id;
}

/** Active workflows of the channel whose `configuration.trigger` keywords match the text. */
async function matchingConfiguredWorkflows(tx: EntityManager, organizationId: string, channel: string, text: string): Promise<string[]> {
  const workflows = await tx.find(
    Workflow,
    { organizationId, channel, status: 'active', deletedAt: null },
    { fields: ['id', 'configuration'], orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  return workflows
    .filter((w) => {
      const trigger = w.configuration?.trigger;
      return trigger !== undefined && messageMatches({ keywords: trigger.keywords, case_sensitive: false, exact_match: false } as never, text);
    })
    .map((w) => w.id);
}

export async function receiveMessage(services: Services, organizationId: string, msg: InboundMessage): Promise<InboundResult> {
  const language = typeof msg.metadata?.language === 'string' ? msg.metadata.language : undefined;
  const em = services.orm.em.fork() as EntityManager;
  const recorded: Recorded = await em.transactional(async (t) => {
    const tx = t as EntityManager;
    const customerId = await upsertCustomer(tx, organizationId, msg);
    const messageId = newId('message');
    // Serialises this customer's messages: two replies racing to one waiting form stay in order.
    const [waiting] = await tx.execute<Array<{ id: string; workflow_id: string }>>(
      `select id, workflow_id from executions
        where organization_id = ? and customer_id = ? and channel = ? and status = 'running' and waiting_node_id is not null
        order by started_at desc limit 1 for update`,
      [organizationId, customerId, msg.channel],
    );
    await tx.execute(
      `insert into messages (id, organization_id, customer_id, channel, direction, text, metadata, language, execution_id)
       values (?, ?, ?, ?, 'inbound', ?, ?::jsonb, ?, ?)`,
      [messageId, organizationId, customerId, msg.channel, msg.message, JSON.stringify(msg.metadata ?? {}), language ?? null, waiting?.id ?? null],
    );
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
        execution_id: waiting?.id ?? null,
      },
    });
    if (waiting) return { messageId, customerId, waiting, pending: [], triggerMatches: [] };

    // One execution per workflow: the oldest matching trigger of a workflow gets the attribution.
    const triggerMatches: Array<{ triggerId: string; workflowId: string }> = [];
    const covered = new Set<string>();
    const matches = await findMatchingMessageTriggers(tx, { organizationId, channel: msg.channel, text: msg.message, ...(language ? { language } : {}) });
    for (const m of matches) {
      if (covered.has(m.workflowId)) continue;
      covered.add(m.workflowId);
      triggerMatches.push(m);
    }
    const pending: PendingExecution[] = [];
    for (const workflowId of await matchingConfiguredWorkflows(tx, organizationId, msg.channel, msg.message)) {
      if (covered.has(workflowId)) continue;
      covered.add(workflowId);
      pending.push(
        await recordExecution(
          tx,
          { organizationId, workflowId, customerId, channel: msg.channel, input: { message: msg.message } },
          { messageId },
        ),
      );
    }
    if (pending.length > 0) {
      await tx.execute(`update messages set execution_id = ? where id = ?`, [pending[0]!.executionId, messageId]);
    }
    return { messageId, customerId, waiting: undefined, pending, triggerMatches };
  });

  const result: InboundResult = { message_id: recorded.messageId, customer_id: recorded.customerId, status: 'no_match', executions: [] };
  if (recorded.waiting) {
    await deliverReply(services, { messageId: recorded.messageId, executionId: recorded.waiting.id, text: msg.message });
    result.status = 'resumed';
    result.executions.push({ id: recorded.waiting.id, workflow_id: recorded.waiting.workflow_id, trigger_id: null, action: 'resumed' });
    return result;
  }
  for (const p of recorded.pending) {
    await dispatchExecution(services, p);
    result.executions.push({ id: p.executionId, workflow_id: p.workflowInput.workflowId, trigger_id: null, action: 'started' });
  }
  for (const m of recorded.triggerMatches) {
    try {
      const fired = await fireTrigger(services, {
        organizationId,
        triggerId: m.triggerId,
        workflowId: m.workflowId,
        channel: msg.channel,
        customerId: recorded.customerId,
        input: { message: msg.message, customer_id: recorded.customerId, channel: msg.channel },
        metadata: { message_id: recorded.messageId, ...(language ? { language } : {}) },
      });
      result.executions.push({ id: fired.executionId, workflow_id: m.workflowId, trigger_id: m.triggerId, action: 'started' });
    } catch (err) {
      // A trigger or workflow deactivated since the match: the firing is recorded as failed by its module.
      if (!(err instanceof AppError)) throw err;
      services.logger.info({ err, triggerId: m.triggerId }, 'matched trigger could not fire');
    }
  }
  if (result.executions.length > 0) result.status = 'started';
  return result;
}

/**
 * Signals a reply to its execution and stamps `delivered_at`. A Temporal outage leaves the
 * row unstamped for the reconciler; a run that no longer exists (it timed out meanwhile)
 * is stamped too, there is nothing left to deliver to.
 */
export async function deliverReply(services: Services, r: { messageId: string; executionId: string; text: string }): Promise<boolean> {
  try {
    await services.temporal.client.workflow
      .getHandle(executionWorkflowId(r.executionId))
      .signal(customerReplySignal, { messageId: r.messageId, text: r.text });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) {
      services.logger.warn({ err, executionId: r.executionId }, 'reply delivery deferred to the reconciler');
      return false;
    }
  }
  await services.orm.em.fork().getConnection().execute('update messages set delivered_at = now() where id = ? and delivered_at is null', [r.messageId]);
  return true;
}

/** Re-delivers inbound replies whose signal was never confirmed (crash after the commit). */
export async function redeliverReplies(services: Services, graceMs: number): Promise<number> {
  const rows = await services.orm.em
    .fork()
    .getConnection()
    .execute<Array<{ id: string; execution_id: string; text: string }>>(
      `select id, execution_id, text from messages
        where direction = 'inbound' and execution_id is not null and delivered_at is null
          and created_at < now() - (? * interval '1 millisecond')
        order by created_at limit 100`,
      [graceMs],
    );
  let n = 0;
  for (const row of rows) {
    // Only replies to a waiting execution are signalled; a message that started executions is
    // linked to its first one and counts as delivered.
    const [started] = await services.orm.em
      .fork()
      .getConnection()
      .execute<Array<{ id: string }>>('select id from executions where id = ? and message_id = ?', [row.execution_id, row.id]);
    if (started) {
      await services.orm.em.fork().getConnection().execute('update messages set delivered_at = now() where id = ?', [row.id]);
      continue;
    }
    if (await deliverReply(services, { messageId: row.id, executionId: row.execution_id, text: row.text })) n++;
  }
  return n;
}
