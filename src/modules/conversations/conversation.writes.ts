/**
 * Owns the writes of the transcript (`messages`). An inbound message is written inside the
 * inbound module's single statement (inbound/message.writes.ts) and an outbound one inside
 * the execution recorder's (executions/execution.recorder.ts): both compose the INSERTs
 * built here, so the table's columns and conflict rules live in one place.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SqlRunner } from '../../db/hot-query';
import { ConversationMessage } from './message.entity';

/** The inbound message's columns as SQL expressions (the caller's placeholders, CTE columns). */
export interface InboundMessageSql {
  id: string;
  organizationId: string;
  customerId: string;
  channel: string;
  text: string;
  metadata: string;
  language: string;
  /** The execution the message answers or started (null: none). */
  executionId: string;
  /** The form wait it claimed (null: none). */
  replyToWait: string;
  providerMessageId: string;
  /** Set when there is nothing to signal (null: the reply is signalled after the commit, `markReplyDelivered`). */
  deliveredAt: string;
  /** Whether the execution it started in the same statement counts it in the rollups (analytics-rollups.sql, `analytics_inbound_rolled_with`). */
  rollupWithExecution: string;
}

/** The INSERT of an inbound message, its values selected `from` the caller's CTEs (e.g. `from … where …`). */
export const insertInboundMessageSql = (m: InboundMessageSql, from: string) =>
  `insert into messages (id, organization_id, customer_id, channel, direction, text, metadata, language, execution_id, reply_to_wait, provider_message_id, delivered_at,
                         rollup_with_execution)
      select ${m.id}, ${m.organizationId}, ${m.customerId}, ${m.channel}, 'inbound', ${m.text}, ${m.metadata}, ${m.language}, ${m.executionId}, ${m.replyToWait}, ${m.providerMessageId},
             ${m.deliveredAt}, ${m.rollupWithExecution}
        ${from}`;

export interface OutboundMessage {
  id: string;
  organizationId: string;
  customerId: string;
  channel: string;
  text: string;
  executionId: string;
  nodeId: string;
  /** One message per dedupe key: an activity retry stores nothing more. */
  dedupeKey: string;
  /**
   * When it was said, if not now: a phone call's question is heard before its row is written
   * (the caller may even answer first). After the execution's outbound messages already
   * written (a microsecond after the last, never the same time): the time is the workflow
   * task's, which a message the same task sent can follow. Not after its inbound ones: an
   * answer the caller gave before this row was written comes after the question all the same.
   */
  createdAt?: Date;
}

/** The INSERT of an execution's outbound message (once per dedupe key; returns its id only when inserted), with its knex bindings. */
export const insertOutboundMessage = (m: OutboundMessage) => ({
  sql: `insert into messages (id, organization_id, customer_id, channel, direction, text, execution_id, node_id, dedupe_key, created_at)
            values (?, ?, ?, ?, 'outbound', ?, ?, ?, ?,
                    case when ?::timestamptz is null then now()
                         else greatest(?::timestamptz, (select max(created_at) + interval '1 microsecond' from messages where execution_id = ? and direction = 'outbound')) end)
            on conflict (dedupe_key) do nothing returning id`,
  bindings: [m.id, m.organizationId, m.customerId, m.channel, m.text, m.executionId, m.nodeId, m.dedupeKey, m.createdAt?.toISOString() ?? null, m.createdAt?.toISOString() ?? null, m.executionId],
});

/** A person's message to a customer (POST /v1/customers/{id}/messages), before its send. */
export interface AgentMessage {
  id: string;
  organizationId: string;
  customerId: string;
  channel: string;
  text: string;
  /** Its dedupe key joins it to its `channel_deliveries` row, as for an execution's messages. */
  dedupeKey: string;
  metadata: Record<string, unknown>;
}

/** The INSERT of an agent message (`sender = 'agent'`, unsent, its send workflow not started yet), with its knex bindings. */
export const insertAgentMessage = (m: AgentMessage) => ({
  sql: `insert into messages (id, organization_id, customer_id, channel, direction, sender, text, metadata, dedupe_key)
            values (?, ?, ?, ?, 'outbound', 'agent', ?, ?::jsonb, ?)`,
  bindings: [m.id, m.organizationId, m.customerId, m.channel, m.text, JSON.stringify(m.metadata), m.dedupeKey],
});

/**
 * The UPDATE ending an agent message's send, once (`sent_at`, or `send_error` bound first; a
 * retried activity finds it ended and changes nothing); returns `id, organization_id,
 * customer_id, channel, text` when it changed the row. Binding: the message id.
 */
export const endAgentSendSql = (outcome: 'sent' | 'failed') =>
  `update messages set ${outcome === 'sent' ? 'sent_at = now()' : 'send_error = ?::jsonb'}
    where id = ? and sender = 'agent' and sent_at is null and send_error is null
    returning id, organization_id, customer_id, channel, text`;

/** Stamps an inbound reply as delivered to its execution (its signal confirmed, or nothing left to signal). */
export async function markReplyDelivered(runner: SqlRunner, messageId: string): Promise<void> {
  await runner.execute('update messages set delivered_at = now() where id = ? and delivered_at is null', [messageId]);
}

/**
 * Links the messages of a debounced burst to the execution they started
 * (debounce/burst-closer.ts), as a message that starts an execution at once is linked.
 */
export async function linkBurstMessages(runner: SqlRunner, executionId: string, messageIds: string[]): Promise<void> {
  await runner.execute('update messages set execution_id = ?, delivered_at = now() where id = any(array(select jsonb_array_elements_text(?::jsonb))) and execution_id is null', [
    executionId,
    JSON.stringify(messageIds),
  ]);
}

/** An inbound message recorded outside the inbound statement (a phone call's `[call]`, in the caller's transaction); flushed by the caller. */
export function createInboundMessage(
  em: EntityManager,
  m: { id: string; organizationId: string; customerId: string; channel: string; text: string; metadata: Record<string, unknown>; executionId: string | null; at: Date },
): void {
  em.create(ConversationMessage, {
    id: m.id,
    organizationId: m.organizationId,
    customerId: m.customerId,
    channel: m.channel,
    direction: 'inbound',
    text: m.text,
    metadata: m.metadata,
    executionId: m.executionId,
    deliveredAt: m.at,
    createdAt: m.at,
  });
}
