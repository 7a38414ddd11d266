/** Customers (created by inbound messages) and their conversation transcript. */
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../http/errors';
import { offsetOf, paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { CustomerListQuery, CustomerOut, CustomerParams, CustomerUpdateIn, TranscriptMessageOut, TranscriptQuery } from '../executions/execution.schemas';
import { recordEvent } from '../events/outbox';
import { ConversationMessage, Customer } from './customer.entity';

const CUSTOMER_NOT_FOUND: [number, string] = [404, 'CUSTOMER_NOT_FOUND'];

export function toCustomerOut(c: Customer): z.output<typeof CustomerOut> {
  return {
    id: c.id,
    channel: c.channel,
    external_id: c.externalId,
    name: c.name,
    tags: c.tags,
    message_count: c.messageCount,
    first_seen_at: c.firstSeenAt.toISOString(),
    last_message_at: c.lastMessageAt?.toISOString() ?? null,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

function toMessageOut(m: ConversationMessage): z.output<typeof TranscriptMessageOut> {
  return {
    id: m.id,
    customer_id: m.customerId,
    channel: m.channel,
    direction: m.direction,
    text: m.text,
    metadata: m.metadata,
    execution_id: m.executionId,
    node_id: m.nodeId,
    created_at: m.createdAt.toISOString(),
  };
}

export function customerRoutes(services: Services): AnyRoute[] {
  const em = () => services.orm.em.fork() as EntityManager;
  const tag = 'Customers';
  const requireCustomer = async (e: EntityManager, organizationId: string, id: string) => {
    const c = await e.findOne(Customer, { id, organizationId });
    if (!c) throw notFound('CUSTOMER_NOT_FOUND', 'Customer');
    return c;
  };
  return [
    defineRoute({
      method: 'get',
      path: '/v1/customers',
      operationId: 'listCustomers',
      summary: 'List customers, newest first',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      query: CustomerListQuery,
      response: z.object({ data: z.array(CustomerOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { page, limit, channel, external_id } = query;
        const where: Record<string, unknown> = { organizationId: credential.organizationId };
        if (channel) where.channel = channel;
        if (external_id) where.externalId = external_id;
        const [items, total] = await em().findAndCount(Customer, where, {
          orderBy: { createdAt: 'desc', id: 'desc' },
          limit,
          offset: offsetOf({ page, limit }),
        });
        return paginate(items.map(toCustomerOut), { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/customers/{customer_id}',
      operationId: 'getCustomer',
      summary: 'Get a customer',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: CustomerParams,
      response: z.object({ data: CustomerOut }),
      errors: [CUSTOMER_NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toCustomerOut(await requireCustomer(em(), credential.organizationId, params.customer_id)) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/customers/{customer_id}',
      operationId: 'updateCustomer',
      summary: "Update a customer's name or tags (tags are analytics segments)",
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: CustomerParams,
      body: CustomerUpdateIn,
      response: z.object({ data: CustomerOut }),
      errors: [CUSTOMER_NOT_FOUND],
      async handler({ params, body, credential }) {
        const e = em();
        const c = await requireCustomer(e, credential.organizationId, params.customer_id);
        const changed: string[] = [];
        if (body.name !== undefined && body.name !== c.name) {
          c.name = body.name;
          changed.push('name');
        }
        const tags = body.tags === undefined ? c.tags : [...new Set(body.tags)];
        if (tags.join('\u0000') !== c.tags.join('\u0000')) {
          c.tags = tags;
          changed.push('tags');
        }
        if (changed.length > 0) {
          c.updatedAt = new Date();
          const data = { customer_id: c.id, external_id: c.externalId, channel: c.channel, name: c.name, changed };
          recordEvent(e, { organizationId: credential.organizationId, type: 'customer.updated', data });
          await e.flush();
        }
        return { data: toCustomerOut(c) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/customers/{customer_id}/messages',
      operationId: 'listCustomerMessages',
      summary: "The customer's conversation transcript (inbound and outbound), oldest first",
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: CustomerParams,
      query: TranscriptQuery,
      response: z.object({ data: z.array(TranscriptMessageOut), pagination: PaginationOut }),
      errors: [CUSTOMER_NOT_FOUND],
      async handler({ params, query, credential }) {
        const e = em();
        const c = await requireCustomer(e, credential.organizationId, params.customer_id);
        const [items, total] = await e.findAndCount(
          ConversationMessage,
          { customerId: c.id, organizationId: credential.organizationId },
          { orderBy: { createdAt: 'asc', id: 'asc' }, limit: query.limit, offset: offsetOf(query) },
        );
        return paginate(items.map(toMessageOut), query, total);
      },
    }),
  ];
}
