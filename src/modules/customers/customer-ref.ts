/**
 * Resolves the `customer_id` an API or webhook trigger's input names: our `cus_…` id or the
 * channel's own id of the customer (a `wa_id`, an IGSID), within the organization. The
 * execution then has a customer to answer, as one started by that customer's message has.
 *
 * A business may write first on WhatsApp (with a template, outside the 24-hour window): a
 * phone number never seen before, E.164 (`+15551234567`) or digits, becomes a customer, its
 * `wa_id` the digits. Instagram and Messenger ids are scoped to the business and only known
 * once the customer wrote: an unknown one resolves to nothing, and the send fails
 * `channel_undeliverable` ("there is no customer to send to").
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../ids';

const PHONE_NUMBER = /^\+?[1-9]\d{6,14}$/;

export async function resolveCustomerRef(em: EntityManager, organizationId: string, channel: string, ref: unknown): Promise<string | undefined> {
  if (typeof ref !== 'string' || ref.length === 0 || ref.length > 128) return undefined;
  const waId = channel === 'whatsapp' && PHONE_NUMBER.test(ref) ? ref.replace(/^\+/, '') : undefined;
  const conn = em.getConnection();
  // A customer is found by the id as written too: one that wrote through `POST /v1/messages`
  // with `+15551234567` is that customer, although Meta's own wa_id is the digits.
  const [row] = await conn.execute<Array<{ id: string }>>(
    'select id from customers where organization_id = ? and (id = ? or (channel = ? and external_id in (?, ?))) order by (id = ?) desc, (external_id = ?) desc limit 1',
    [organizationId, ref, channel, ref, waId ?? ref, ref, ref],
  );
  if (row || !waId) return row?.id;
  await conn.execute(
    `insert into customers (id, organization_id, channel, external_id, metadata) values (?, ?, ?, ?, jsonb_build_object('source', 'business_initiated'))
     on conflict (organization_id, channel, external_id) do nothing`,
    [newId('customer'), organizationId, channel, waId],
  );
  const [created] = await conn.execute<Array<{ id: string }>>('select id from customers where organization_id = ? and channel = ? and external_id = ?', [organizationId, channel, waId]);
  return created?.id;
}
