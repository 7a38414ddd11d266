import { Migration } from '@mikro-orm/migrations';

/**
 * Bulk replays (src/modules/replays). `replays` is the record the API serves; its Temporal
 * workflow `replay:<id>` pages through the matching executions. `replay_items` holds one row
 * per processed execution: its primary key makes a batch re-run after a worker kill count
 * each execution once, and the counters are read from it. The partial index serves the
 * keyset scan over failed/cancelled executions in (started_at, id) order.
 */
export class Migration20261125000500_replays extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table replays (
        id text primary key,
        organization_id text not null references organizations(id),
        filter jsonb not null,
        rate_per_second integer not null,
        revision text not null,
        status text not null check (status in ('running', 'completed', 'cancelled')),
        matched integer not null,
        cutoff timestamptz not null,
        created_at timestamptz not null default now(),
        completed_at timestamptz
      );
      create index replays_org_idx on replays (organization_id, created_at desc, id desc);

      create table replay_items (
        replay_id text not null references replays(id),
        execution_id text not null references executions(id),
        outcome text not null check (outcome in ('started', 'skipped', 'failed')),
        retry_execution_id text,
        reason_code text,
        reason_message text,
        created_at timestamptz not null default now(),
        primary key (replay_id, execution_id)
      );
      create index executions_replay_scan_idx on executions (organization_id, started_at, id) where status in ('failed', 'cancelled');
    `);
  }
}
