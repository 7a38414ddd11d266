/**
 * The delivery records of transcript messages (`channel_deliveries`, written by the channels
 * module as providers report statuses), read for the customer transcript. A read of its own,
 * below both customers and channels, so customers never imports channels.
 */
import type { EntityManager } from '@mikro-orm/postgresql';

/** Where an outbound message stands at its provider. */
export type DeliveryStatus = 'sent' | 'delivered' | 'read' | 'failed';

type Sql = Pick<EntityManager, 'getConnection'>;
const run = <T>(em: Sql, sql: string, params: unknown[]) => em.getConnection().execute<T[]>(sql, params);

export interface DeliveryRecord {
  delivery_status: DeliveryStatus;
  delivered_at: Date | null;
  read_at: Date | null;
  error: { code: number | null; title: string | null; message: string | null } | null;
}

/** The delivery records of transcript messages, by dedupe key (outbound messages sent through a connection only). */
export async function deliveriesOf(em: Sql, organizationId: string, dedupeKeys: string[]): Promise<Map<string, DeliveryRecord>> {
  const out = new Map<string, DeliveryRecord>();
  if (dedupeKeys.length === 0) return out;
  const rows = await run<DeliveryRecord & { dedupe_key: string }>(
    em,
    `select dedupe_key, status as delivery_status, delivered_at, read_at, error from channel_deliveries
      where organization_id = ? and dedupe_key in (${dedupeKeys.map(() => '?').join(', ')})`,
    [organizationId, ...dedupeKeys],
  );
  for (const r of rows) out.set(r.dedupe_key, r);
  return out;
}
