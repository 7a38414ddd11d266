/**
 * The debounce module's writes inside the inbound message's single statement
 * (inbound/message.writes.ts): this module owns `debounce_bursts` and
 * `debounce_burst_messages`; that statement composes these CTEs instead of naming their
 * columns. docs/executions.md, "Debounced bursts", says the rule.
 *
 * The arguments are SQL expressions (the caller's placeholders, CTE names), not values.
 */

/**
 * One debounced target of a message's channel (a message trigger, or a workflow's own
 * keyword trigger, with `debounce_ms` > 0) as a JSON object for `joinOrOpenBurstsCtes`.
 * `opens`: the message matches it (and no other target took its workflow), so it opens a
 * burst when none is open; every debounced target is joined when a burst is open.
 */
export interface BurstTargetRow {
  /** The id the burst gets if this message opens it. */
  id: string;
  /** The trigger's id, or the workflow's for its own keyword trigger. */
  target: string;
  workflow_id: string;
  trigger_id: string | null;
  debounce_ms: number;
  max_wait_ms: number;
  opens: boolean;
}

export interface BurstSql {
  organizationId: string;
  customerId: string;
  channel: string;
  messageId: string;
  text: string;
  /** The JSON array of `BurstTargetRow`s. */
  targetsJson: string;
  /** When the message may join or open bursts at all (its customer was written, it is not a form reply). */
  when: string;
}

const TARGET_COLUMNS = 'id text, target text, workflow_id text, trigger_id text, debounce_ms integer, max_wait_ms integer, opens boolean';

/**
 * The CTEs `joined` and `opened` (each returning `id, target, workflow_id, trigger_id`) and
 * `burst_messages`:
 *
 * - join: the open burst of each target for this customer and channel has its `last_at`
 *   moved to the database's clock. The UPDATE locks the row, and the debouncer's close
 *   locks it too (`select … for update`, after the customer's row as here): a message
 *   either joins before the close, and is in the execution, or finds the burst closed;
 * - open: a target the message `opens` with no open burst gets one; two concurrent first
 *   messages are ordered by the partial unique index (the second does nothing here, and the
 *   caller writes again: see `raced`, inbound/message.writes.ts);
 * - the message is added to the burst it joined or opened; `seq` is taken while the
 *   statement holds the customer's row, so it is the customer's arrival order.
 */
export const joinOrOpenBurstsCtes = (p: BurstSql) => `joined as (
      update debounce_bursts b set last_at = clock_timestamp()
        from jsonb_to_recordset(${p.targetsJson}::jsonb) d(${TARGET_COLUMNS})
       where b.organization_id = ${p.organizationId} and b.target = d.target and b.customer_id = ${p.customerId} and b.channel = ${p.channel}
         and b.status = 'open' and ${p.when}
      returning b.id, b.target, b.workflow_id, b.trigger_id
    ),
    opened as (
      insert into debounce_bursts (id, organization_id, target, workflow_id, trigger_id, customer_id, channel, debounce_ms, max_wait_ms)
      select d.id, ${p.organizationId}, d.target, d.workflow_id, d.trigger_id, ${p.customerId}, ${p.channel}, d.debounce_ms, d.max_wait_ms
        from jsonb_to_recordset(${p.targetsJson}::jsonb) d(${TARGET_COLUMNS})
       where d.opens and ${p.when} and d.target not in (select target from joined)
      on conflict (organization_id, target, customer_id, channel) where status = 'open' do nothing
      returning id, target, workflow_id, trigger_id
    ),
    burst_messages as (
      insert into debounce_burst_messages (burst_id, message_id, text)
      select id, ${p.messageId}, ${p.text} from (select id from joined union all select id from opened) b
    )`;

/**
 * True when a target the message should have joined or opened got neither (a SQL
 * expression over the CTEs above): with `raced` (another statement of the customer
 * committed after this one's snapshot) that burst may be one this snapshot cannot see.
 */
export const burstMissedSql = (targetsJson: string) =>
  `exists (select 1 from jsonb_to_recordset(${targetsJson}::jsonb) d(${TARGET_COLUMNS})
            where d.target not in (select target from joined union all select target from opened))`;
