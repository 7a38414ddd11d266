import { Migration } from '@mikro-orm/migrations';

/**
 * Debounced bursts (docs/executions.md, "Debounced bursts"): the messages of one customer on
 * one channel that arrive close together for one debounced target (a message trigger, or a
 * workflow's own keyword trigger) become one execution.
 *
 * - `debounce_bursts`: one row per burst. At most one is `open` per (target, customer,
 *   channel) (the partial unique index: two concurrent first messages open one). A message
 *   joins the open burst by UPDATE of `last_at` (a row lock); the burst's debouncer closes
 *   it under `select … for update`, so a message either joins before the close or finds
 *   the burst closed. `temporal_started_at` / `start_claimed_until` are the durable start
 *   of its debouncer workflow (src/modules/starts/durable-start.ts); the partial index
 *   holds the rows the reconciler looks for.
 * - `debounce_burst_messages`: the messages of a burst; `seq` is the arrival order (taken
 *   while the message's statement holds the customer's row, which orders one customer's
 *   messages).
 */
export class Migration20261220000100_debounce extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table debounce_bursts (
        id text primary key,
        organization_id text not null references organizations (id),
        target text not null,
        workflow_id text not null,
        trigger_id text null,
        customer_id text not null references customers (id),
        channel text not null,
        status text not null default 'open' check (status in ('open', 'closed')),
        debounce_ms integer not null check (debounce_ms > 0),
        max_wait_ms integer not null check (max_wait_ms >= debounce_ms),
        first_at timestamptz not null default clock_timestamp(),
        last_at timestamptz not null default clock_timestamp(),
        closed_at timestamptz null,
        outcome text null,
        execution_id text null,
        temporal_started_at timestamptz null,
        start_claimed_until timestamptz null,
        created_at timestamptz not null default now()
      );
      create unique index debounce_bursts_open_key on debounce_bursts (organization_id, target, customer_id, channel) where status = 'open';
      create index debounce_bursts_unstarted_idx on debounce_bursts (created_at) where temporal_started_at is null and status = 'open';
      create table debounce_burst_messages (
        burst_id text not null references debounce_bursts (id),
        message_id text not null,
        seq bigint generated always as identity,
        text text not null,
        primary key (burst_id, message_id)
      );
      create index debounce_burst_messages_message_idx on debounce_burst_messages (message_id);
    `);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists debounce_burst_messages; drop table if exists debounce_bursts;');
  }
}
