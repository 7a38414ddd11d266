import { Migration } from '@mikro-orm/migrations';

/**
 * Outbound webhooks and their delivery log (see src/modules/webhooks), plus a NOTIFY on
 * every insert into the event outbox so the dispatcher wakes at once instead of at its
 * next poll.
 */
export class Migration20261122000500_webhooks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table webhooks (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        url text not null,
        events text[] not null,
        secret text not null,
        active boolean not null default true,
        max_retries integer not null default 3 check (max_retries between 0 and 10),
        retry_delay_ms integer not null default 1000 check (retry_delay_ms between 100 and 30000),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        deactivated_reason text
      );
      create unique index webhooks_org_url_uniq on webhooks (organization_id, url);
      create index webhooks_org_list_idx on webhooks (organization_id, created_at desc, id desc);
      create index webhooks_events_idx on webhooks using gin (events) where active;

      create table webhook_logs (
        id text primary key,
        webhook_id text not null references webhooks(id) on delete cascade,
        organization_id text not null,
        event_id text not null,
        event_type text not null,
        status text not null check (status in ('success', 'failed')),
        response_code integer not null,
        response_time_ms integer not null,
        attempt integer not null,
        delivered_at timestamptz not null default now(),
        error_message text,
        response_body text
      );
      create index webhook_logs_list_idx on webhook_logs (webhook_id, delivered_at desc, id desc);
      create index webhook_logs_event_idx on webhook_logs (webhook_id, event_id);

      create function events_notify() returns trigger language plpgsql as $$
      begin
        perform pg_notify('wfa_events', '');
        return null;
      end $$;
      create trigger events_notify_trg after insert on events for each statement execute function events_notify();
    `);
  }
}
