/**
 * Every write (and the reads that go with them) of what channel connections learn about a
 * conversation's messages, in one place so that the transcript's owner can take them over:
 *
 * - `channel_deliveries`: an outbound message sent through a connection, keyed by the
 *   provider's message id and joined to the transcript row by its dedupe key; its delivery
 *   status only moves forward (sent < delivered < read; failed is final), a `read` implies
 *   delivered, a repeated status changes nothing. Each change writes its
 *   `message.status_updated` event in the same statement (the outbox).
 * - `channel_customer_windows`: each customer's last inbound message per connection, where
 *   Meta's 24-hour customer service window starts (its length: customerServiceWindowMsOf in config.ts).
 * - which connection an execution's inbound message came through (`messages.metadata`).
 */
import type { SqlFragment, SqlRunner } from '../../db/hot-query';
import { newId } from '../../ids';
import { insertEventsSql } from '../events/outbox';
import type { CompanionWrite } from '../inbound/inbound-message';
import type { StatusItem } from './channel-provider';

/** An EntityManager, or the hot pool's runner (src/db/hot-query.ts). */
type Sql = SqlRunner;
const run = <T>(em: Sql, sql: string, params: unknown[]) => em.execute<T[]>(sql, params);

/**
 * Records an inbound message's time on its connection (kept the latest: redeliveries and
 * reorderings do not move it back), in the message's own statement: committed with it, so
 * before any execution it starts or resumes answers inside the window it opens.
 */
export const inboundTimeWrite = (connectionId: string, externalId: string, at: Date): CompanionWrite => ({
  name: 'customer-window',
  sql: `insert into channel_customer_windows (connection_id, external_id, last_inbound_at) values (?::text, ?::text, ?::timestamptz)
     on conflict (connection_id, external_id) do update set last_inbound_at = greatest(channel_customer_windows.last_inbound_at, excluded.last_inbound_at)`,
  bindings: [connectionId, externalId, at],
});

/** The customer's id on the channel and their last inbound time on the connection (null: never wrote there). */
export async function recipientOf(em: Sql, connectionId: string, customerId: string): Promise<Array<{ external_id: string; last_inbound_at: Date | null }>> {
  return await run(
    em,
    `select c.external_id, w.last_inbound_at from customers c
       left join channel_customer_windows w on w.connection_id = ? and w.external_id = c.external_id
      where c.id = ?`,
    [connectionId, customerId],
  );
}

/**
 * The connection the execution's starting message came through (set by the hook receiver in
 * the message's metadata), as a scalar subquery with one knex binding, the execution id.
 */
export const inboundConnectionSql = `select m.metadata->>'channel_connection_id' from executions e join messages m on m.id = e.message_id where e.id = ?`;

/** An outbound message the provider accepted (an activity retry that sent nothing new changes nothing), as a statement's CTE body. */
export const recordSentSql = (d: { organizationId: string; connectionId: string; dedupeKey: string; providerMessageId: string }): SqlFragment => ({
  sql: `insert into channel_deliveries (connection_id, provider_message_id, organization_id, dedupe_key) values (?, ?, ?, ?)
     on conflict do nothing`,
  bindings: [d.connectionId, d.providerMessageId, d.organizationId, d.dedupeKey],
});

/**
 * Applies a provider's status to the message it names, forward only, with its
 * `message.status_updated` event; returns false when it changed nothing (a duplicate, an
 * older status, a status after `failed`, or a message we did not send through this connection).
 */
export async function applyDeliveryStatus(em: Sql, organizationId: string, connectionId: string, s: StatusItem): Promise<boolean> {
  const rows = await run<{ changed: boolean }>(
    em,
    `with upd as (
       update channel_deliveries d set
         status = ?::text,
         delivered_at = case when ?::text in ('delivered', 'read') then coalesce(d.delivered_at, ?::timestamptz) else d.delivered_at end,
         read_at = case when ?::text = 'read' then coalesce(d.read_at, ?::timestamptz) else d.read_at end,
         error = case when ?::text = 'failed' then ?::jsonb else d.error end,
         updated_at = now()
       where d.connection_id = ? and d.provider_message_id = ? and d.organization_id = ? and d.status <> 'failed'
         and (?::text = 'failed' or array_position(array['sent', 'delivered', 'read'], ?::text) > array_position(array['sent', 'delivered', 'read'], d.status))
       returning d.*
     ),
     ev as (
       ${insertEventsSql(`select ?, upd.organization_id, 'message.status_updated',
              jsonb_build_object(
                'message_id', m.id, 'customer_id', m.customer_id, 'channel', m.channel, 'execution_id', m.execution_id,
                'channel_connection_id', upd.connection_id, 'provider_message_id', upd.provider_message_id,
                'delivery_status', upd.status, 'delivered_at', upd.delivered_at, 'read_at', upd.read_at, 'error', upd.error),
              now()
         from upd join messages m on m.dedupe_key = upd.dedupe_key and m.organization_id = upd.organization_id`)}
     )
     select exists (select 1 from upd) as changed`,
    [
      s.status,
      s.status,
      s.at,
      s.status,
      s.at,
      s.status,
      s.error ? JSON.stringify(s.error) : null,
      connectionId,
      s.providerMessageId,
      organizationId,
      s.status,
      s.status,
      newId('event'),
    ],
  );
  return rows[0]?.changed === true;
}
