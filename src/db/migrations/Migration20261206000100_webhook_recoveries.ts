import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook consumers (#31): a webhook's optional throttle (`rate_limit`, deliveries per
 * second; null = unthrottled), and recoveries. A recovery snapshots the events of its window
 * into `webhook_recovery_items` when it is created; its workflow walks the items without an
 * outcome, so a crash resumes where the last recorded outcome left it. The partial index
 * serves that walk; the other one the reconciler's search for unconfirmed starts.
 */
export class Migration20261206000100_webhook_recoveries extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table webhooks add column rate_limit integer null;
      create table webhook_recoveries (
        id text primary key,
        organization_id text not null references organizations(id),
        webhook_id text not null references webhooks(id) on delete cascade,
        since timestamptz not null,
        until timestamptz not null,
        status_filter text null,
        status text not null default 'running',
        matched integer not null,
        created_at timestamptz not null default now(),
        completed_at timestamptz null,
        temporal_started_at timestamptz null
      );
      create index webhook_recoveries_unstarted_idx on webhook_recoveries (created_at) where temporal_started_at is null;
      create table webhook_recovery_items (
        recovery_id text not null references webhook_recoveries(id) on delete cascade,
        event_id text not null,
        event_created_at timestamptz not null,
        outcome text null,
        delivery_id text null,
        primary key (recovery_id, event_id)
      );
      create index webhook_recovery_items_pending_idx on webhook_recovery_items (recovery_id, event_created_at, event_id) where outcome is null;
    `);
  }
}
