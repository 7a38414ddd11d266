/**
 * The customers module's writes that run inside another module's single statement: the
 * inbound message's (inbound/message.writes.ts) and the outbound message's
 * (executions/execution.recorder.ts). This module owns the `customers` table; those
 * statements compose these fragments instead of writing the table themselves.
 *
 * The arguments are SQL expressions (the caller's placeholders, CTE names), not values.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../ids';
import { recordEvent } from '../events/outbox';
import { Customer } from './customer.entity';

/** The inbound statement's customer: its placeholders, already cast. */
export interface InboundCustomerSql {
  organizationId: string;
  channel: string;
  externalId: string;
  /** The id a new customer gets, or the known customer's id. */
  customerId: string;
  /** The name the message carries (null: keep the stored one). */
  name: string;
}

/**
 * The CTE `cust` of a customer not known yet: inserted (counted once, last message now)
 * unless `skip` holds; nothing when the customer exists after all (a concurrent first
 * message created it). Returns `id, created (true), old_name (null)`.
 */
export const insertInboundCustomerCte = (p: InboundCustomerSql, skip: string) => `cust as (
     insert into customers (id, organization_id, channel, external_id, name, message_count, last_message_at)
     select ${p.customerId}, ${p.organizationId}, ${p.channel}, ${p.externalId}, ${p.name}, 1, now() where not ${skip}
     on conflict (organization_id, channel, external_id) do nothing
     returning id, true as created, null::text as old_name, false as raced
   )`;

/**
 * The CTEs `old` and `cust` of a known customer: counted (which locks its row, so the
 * customer's concurrent messages are ordered) and renamed when the message carries a new
 * name, unless `skip` holds. Returns `id, created (false), old_name`, and `raced`: another
 * statement of this customer committed after this statement's snapshot was taken (the count
 * it locked is not the one its snapshot read), so rows that statement inserted are invisible
 * to this one (debounced bursts retry on it, inbound/message.writes.ts).
 */
export const countInboundCustomerCtes = (p: InboundCustomerSql, skip: string) => `old as (select name, message_count from customers where id = ${p.customerId}),
   cust as (
     update customers set message_count = message_count + 1, last_message_at = now(), name = coalesce(${p.name}, name),
            updated_at = case when ${p.name} is not null and ${p.name} is distinct from name then now() else updated_at end
      where id = ${p.customerId} and external_id = ${p.externalId} and not ${skip}
      returning id, false as created, (select name from old) as old_name, message_count <> (select message_count from old) + 1 as raced
   )`;

/** The UPDATE counting an outbound message on the customer (knex binding: the customer id), when `when` holds. */
export const countOutboundMessageSql = (when: string) => `update customers set message_count = message_count + 1 where id = ? and ${when}`;

/**
 * A customer's contact outside the inbound statement (a phone call's first request, in the
 * caller's transaction): the customer found or created (with `customer.created`), its message
 * count and last message time moved. Flushed by the caller.
 */
export async function recordCustomerContact(em: EntityManager, p: { organizationId: string; channel: string; externalId: string; at: Date }): Promise<{ id: string }> {
  const { organizationId, channel, externalId, at } = p;
  let customer = await em.findOne(Customer, { organizationId, channel, externalId });
  if (!customer) {
    customer = em.create(Customer, { id: newId('customer'), organizationId, channel, externalId, firstSeenAt: at, createdAt: at, updatedAt: at });
    recordEvent(em, { organizationId, type: 'customer.created', data: { customer_id: customer.id, external_id: externalId, channel, name: null }, occurredAt: at });
  }
  customer.messageCount += 1;
  customer.lastMessageAt = at;
  return customer;
}
