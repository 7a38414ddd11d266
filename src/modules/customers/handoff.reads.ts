/**
 * The reads of human handoffs (`customer_handoffs`): the handoff in force of a customer, as the
 * customer routes show it. The writes (start, end, expiry) are handoffs/handoff.service.ts, which
 * sits above executions; these reads stay here so customers never imports it back.
 */
import type { SqlRunner } from '../../db/hot-query';

export interface HandoffView {
  since: string;
  until: string;
  reason: string | null;
}

export interface HandoffRow {
  id: string;
  organization_id: string;
  customer_id: string;
  channel: string;
  reason: string | null;
  execution_id: string | null;
  started_at: string | Date;
  until: string | Date;
  ended_at: string | Date | null;
  end_reason: string | null;
}

export const iso = (v: string | Date) => new Date(v).toISOString();

export const handoffView = (h: HandoffRow): HandoffView => ({ since: iso(h.started_at), until: iso(h.until), reason: h.reason });

const ACTIVE = 'ended_at is null and until > now()';

/** The customer's handoff in force, or null. */
export async function currentHandoff(em: SqlRunner, customerId: string): Promise<HandoffView | null> {
  const [row] = await em.execute<HandoffRow[]>(`select * from customer_handoffs where customer_id = ? and ${ACTIVE}`, [customerId]);
  return row ? handoffView(row) : null;
}

/** The handoffs in force of these customers, by customer id. */
export async function currentHandoffs(em: SqlRunner, customerIds: string[]): Promise<Map<string, HandoffView>> {
  if (customerIds.length === 0) return new Map();
  // The ids as one JSON array: knex would spread a JS array into a list of placeholders.
  const rows = await em.execute<HandoffRow[]>(
    `select * from customer_handoffs where customer_id in (select jsonb_array_elements_text(?::jsonb)) and ${ACTIVE}`,
    [JSON.stringify(customerIds)],
  );
  return new Map(rows.map((r) => [r.customer_id, handoffView(r)]));
}
