/**
 * Resolves the `customer_id` an API or webhook trigger's input names: our `cus_…` id or the
 * channel's own id of the customer (a `wa_id`, an IGSID), within the organization. The
 * execution then has a customer to answer, as one started by that customer's message has.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

export async function resolveCustomerRef(em: EntityManager, organizationId: string, channel: string, ref: unknown): Promise<string | undefined> {
  if (typeof ref !== 'string' || ref.length === 0 || ref.length > 128) return undefined;
  const [row] = await em
    .getConnection()
    .execute<Array<{ id: string }>>(
      'select id from customers where organization_id = ? and (id = ? or (channel = ? and external_id = ?)) order by (id = ?) desc limit 1',
      [organizationId, ref, channel, ref, ref],
    );
  return row?.id;
}
