/**
 * Owns the customers table and reads the transcript: a customer is created (or counted) by
 * its inbound messages (`recordInboundCustomer`, inside the inbound message's transaction),
 * then read and edited through /v1/customers. Every change records its `customer.*` event
 * in the same transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId } from '../../ids';
import { recordEvent } from '../events/outbox';
import { ConversationMessage, Customer } from './customer.entity';

export const customerNotFound = () => notFound('CUSTOMER_NOT_FOUND', 'Customer');

export class CustomerService {
  constructor(private readonly em: EntityManager) {}

  async list(organizationId: string, filter: { channel?: string; external_id?: string }, page: Page) {
    const where: Record<string, unknown> = { organizationId };
    if (filter.channel) where.channel = filter.channel;
    if (filter.external_id) where.externalId = filter.external_id;
    const [items, total] = await this.em.findAndCount(Customer, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
    });
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<Customer> {
    const c = await this.em.findOne(Customer, { id, organizationId });
    if (!c) throw customerNotFound();
    return c;
  }

  /** Sets the name and/or tags (deduplicated); `customer.updated` lists what changed, nothing is written when nothing did. */
  async update(organizationId: string, id: string, input: { name?: string | null; tags?: string[] }): Promise<Customer> {
    const c = await this.get(organizationId, id);
    const changed: string[] = [];
    if (input.name !== undefined && input.name !== c.name) {
      c.name = input.name;
      changed.push('name');
    }
    const tags = input.tags === undefined ? c.tags : [...new Set(input.tags)];
    if (tags.join('\u0000') !== c.tags.join('\u0000')) {
      c.tags = tags;
      changed.push('tags');
    }
    if (changed.length > 0) {
      c.updatedAt = new Date();
      const data = { customer_id: c.id, external_id: c.externalId, channel: c.channel, name: c.name, changed };
      recordEvent(this.em, { organizationId, type: 'customer.updated', data });
      await this.em.flush();
    }
    return c;
  }

  /** The customer's transcript (inbound and outbound messages), oldest first. */
  async transcript(organizationId: string, id: string, page: Page) {
    const c = await this.get(organizationId, id);
    const [items, total] = await this.em.findAndCount(
      ConversationMessage,
      { customerId: c.id, organizationId },
      { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit, offset: offsetOf(page) },
    );
    return { items, total };
  }
}

/**
 * Creates the customer of an inbound message, or counts the message on it (and takes a new
 * `name`), in `tx`: one upsert, so concurrent first messages make one customer. Records
 * `customer.created`, or `customer.updated` when the name changed. Returns the customer id.
 */
export async function recordInboundCustomer(
  tx: EntityManager,
  organizationId: string,
  m: { channel: string; externalId: string; name: string | null },
): Promise<string> {
  const { channel, externalId, name } = m;
  const [row] = await tx.execute<Array<{ id: string; created: boolean; old_name: string | null; name: string | null; external_id: string }>>(
    `with old as (select id, name from customers where organization_id = ? and channel = ? and external_id = ?)
     insert into customers (id, organization_id, channel, external_id, name, message_count, last_message_at)
     values (?, ?, ?, ?, ?, 1, now())
     on conflict (organization_id, channel, external_id) do update
       set message_count = customers.message_count + 1, last_message_at = now(),
           name = coalesce(excluded.name, customers.name),
           updated_at = case when excluded.name is not null and excluded.name is distinct from customers.name then now() else customers.updated_at end
     returning id, (xmax = 0) as created, (select name from old) as old_name, name, external_id`,
    [organizationId, channel, externalId, newId('customer'), organizationId, channel, externalId, name],
  );
  if (!row) throw new Error('customer upsert returned nothing');
  const data = { customer_id: row.id, external_id: row.external_id, channel, name: row.name };
  if (row.created) recordEvent(tx, { organizationId, type: 'customer.created', data });
  else if (name !== null && row.old_name !== name) {
    recordEvent(tx, { organizationId, type: 'customer.updated', data: { ...data, changed: ['name'] } });
  }
  return row.id;
}
