/** The customer endpoints: customers (created by inbound messages) and their conversation transcript. */
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { ConversationMessage } from '../conversations/message.entity';
import type { Customer } from './customer.entity';
import { CustomerListQuery, CustomerOut, CustomerParams, CustomerUpdateIn, TranscriptMessageOut, TranscriptQuery } from './customer.schemas';
import { CustomerService } from './customer.service';
import { type DeliveryRecord, deliveriesOf } from '../channels/message-status.writes';

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

function toMessageOut(m: ConversationMessage, delivery: DeliveryRecord | undefined): z.output<typeof TranscriptMessageOut> {
  return {
    id: m.id,
    customer_id: m.customerId,
    channel: m.channel,
    direction: m.direction,
    text: m.text,
    metadata: m.metadata,
    execution_id: m.executionId,
    node_id: m.nodeId,
    delivery_status: delivery?.delivery_status ?? null,
    delivered_at: delivery?.delivered_at ? new Date(delivery.delivered_at).toISOString() : null,
    read_at: delivery?.read_at ? new Date(delivery.read_at).toISOString() : null,
    error: delivery?.error ?? null,
    created_at: m.createdAt.toISOString(),
  };
}

export function customerRoutes(services: Services): AnyRoute[] {
  const svc = () => new CustomerService(services.orm.em.fork());
  const tag = 'Customers';
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
        const { page, limit, ...filter } = query;
        const { items, total } = await svc().list(credential.organizationId, filter, { page, limit });
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
        return { data: toCustomerOut(await svc().get(credential.organizationId, params.customer_id)) };
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
        return { data: toCustomerOut(await svc().update(credential.organizationId, params.customer_id, body)) };
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
        const { items, total } = await svc().transcript(credential.organizationId, params.customer_id, query);
        const keys = items.flatMap((m) => (m.direction === 'outbound' && m.dedupeKey ? [m.dedupeKey] : []));
        const deliveries = await deliveriesOf(services.orm.em.fork(), credential.organizationId, keys);
        return paginate(items.map((m) => toMessageOut(m, m.dedupeKey ? deliveries.get(m.dedupeKey) : undefined)), query, total);
      },
    }),
  ];
}
