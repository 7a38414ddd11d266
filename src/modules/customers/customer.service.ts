/**
 * Owns the customers table and reads the transcript: a customer is created (or counted) by
 * its inbound messages (in the inbound message's one statement, inbound/message.writes.ts),
 * then read and edited through /v1/customers. Every change records its `customer.*` event
 * in the same transaction.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { recordEvent } from '../events/outbox';
import { ConversationMessage } from '../conversations/message.entity';
import { Customer } from './customer.entity';

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
