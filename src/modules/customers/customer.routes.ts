/** The customer endpoints: customers (created by inbound messages) and their conversation transcript. */
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { type ConversationMessage, senderOf } from '../conversations/message.entity';
import type { Customer } from './customer.entity';
import { CustomerListQuery, CustomerOut, CustomerParams, CustomerUpdateIn, TranscriptMessageOut, TranscriptQuery } from './customer.schemas';
import { CustomerService } from './customer.service';
import { currentHandoff, currentHandoffs, type HandoffView } from './handoff.reads';
import { type DeliveryRecord, deliveriesOf } from '../conversations/message-deliveries';

const CUSTOMER_NOT_FOUND: [number, string] = [404, 'CUSTOMER_NOT_FOUND'];

export function toCustomerOut(c: Customer, handoff: HandoffView | null): z.output<typeof CustomerOut> {
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
    handoff,
  };
}

/**
 * What the transcript says of a message's delivery: the provider's report (a Meta
 * connection's statuses) when there is one; for an agent message without one, how its send
 * stands (`pending` until it ends, `sent`, or `failed` with its refusal).
 */
function deliveryOf(m: ConversationMessage, delivery: DeliveryRecord | undefined): (Omit<DeliveryRecord, 'delivery_status'> & { delivery_status: DeliveryRecord['delivery_status'] | 'pending' }) | undefined {
  if (delivery || m.sender !== 'agent') return delivery;
  if (m.sendError) return { delivery_status: 'failed', delivered_at: null, read_at: null, error: { code: null, title: m.sendError.type, message: m.sendError.message } };
  return { delivery_status: m.sentAt ? 'sent' : 'pending', delivered_at: null, read_at: null, error: null };
}

export function toMessageOut(m: ConversationMessage, record: DeliveryRecord | undefined): z.output<typeof TranscriptMessageOut> {
  const delivery = deliveryOf(m, record);
  return {
    id: m.id,
    customer_id: m.customerId,
    channel: m.channel,
    direction: m.direction,
    sender: senderOf(m),
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
        const handoffs = await currentHandoffs(services.orm.em.fork(), items.map((c) => c.id));
        return paginate(items.map((c) => toCustomerOut(c, handoffs.get(c.id) ?? null)), { page, limit }, total);
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
        const c = await svc().get(credential.organizationId, params.customer_id);
        return { data: toCustomerOut(c, await currentHandoff(services.orm.em.fork(), c.id)) };
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
        const c = await svc().update(credential.organizationId, params.customer_id, body);
        return { data: toCustomerOut(c, await currentHandoff(services.orm.em.fork(), c.id)) };
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
