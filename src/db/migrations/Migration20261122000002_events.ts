import { Migration } from '@mikro-orm/migrations';

/** The event outbox (see src/modules/events). */
export class Migration20261122000002_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table events (
        id text primary key,
        organization_id text not null references organizations(id),
        type text not null,
        data jsonb not null,
        created_at timestamptz not null default now(),
        dispatched_at timestamptz
      );
      create index events_undispatched_idx on events (created_at) where dispatched_at is null;
      create index events_org_idx on events (organization_id, created_at desc);
    `);
  }
}
