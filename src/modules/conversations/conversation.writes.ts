/**
 * Owns the writes of the transcript (`messages`). An inbound message is written inside the
 * inbound module's single statement (inbound/message.writes.ts) and an outbound one inside
 * the execution recorder's (executions/execution.recorder.ts): both compose the INSERTs
 * built here, so the table's columns and conflict rules live in one place.
 */
import type { SqlRunner } from '../../db/hot-query';

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
}

/** The INSERT of an inbound message, its values selected `from` the caller's CTEs (e.g. `from … where …`). */
export const insertInboundMessageSql = (m: InboundMessageSql, from: string) =>
  `insert into messages (id, organization_id, customer_id, channel, direction, text, metadata, language, execution_id, reply_to_wait, provider_message_id, delivered_at)
      select ${m.id}, ${m.organizationId}, ${m.customerId}, ${m.channel}, 'inbound', ${m.text}, ${m.metadata}, ${m.language}, ${m.executionId}, ${m.replyToWait}, ${m.providerMessageId},
             ${m.deliveredAt}
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
}

/** The INSERT of an execution's outbound message (once per dedupe key; returns its id only when inserted), with its knex bindings. */
export const insertOutboundMessage = (m: OutboundMessage) => ({
  sql: `insert into messages (id, organization_id, customer_id, channel, direction, text, execution_id, node_id, dedupe_key)
            values (?, ?, ?, ?, 'outbound', ?, ?, ?, ?)
            on conflict (dedupe_key) do nothing returning id`,
  bindings: [m.id, m.organizationId, m.customerId, m.channel, m.text, m.executionId, m.nodeId, m.dedupeKey],
});

/** Stamps an inbound reply as delivered to its execution (its signal confirmed, or nothing left to signal). */
export async function markReplyDelivered(runner: SqlRunner, messageId: string): Promise<void> {
  await runner.execute('update messages set delivered_at = now() where id = ? and delivered_at is null', [messageId]);
}
