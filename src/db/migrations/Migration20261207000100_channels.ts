import { Migration } from '@mikro-orm/migrations';

/**
 * Channel connections (WhatsApp Cloud API, Instagram Messaging, a generic HTTP provider)
 * per organization, with their secrets sealed (src/secrets.ts) in `secrets`; soft-deleted,
 * names unique among the live ones.
 *
 * `channel_deliveries`: what the provider said of each outbound message sent through a
 * connection (its message id, the delivery status moving forward only). Kept beside
 * `messages`, joined on the message's dedupe key, so the transcript's writers stay its own.
 *
 * `channel_customer_windows`: each customer's (wa_id's, IGSID's) last inbound message per
 * connection, the start of Meta's 24-hour customer service window; written before the
 * message is processed, so a reply's answer already sees the window it opened.
 */
export class Migration20261207000100_channels extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table channel_connections (
        id text primary key,
        organization_id text not null references organizations (id),
        type text not null,
        channel text not null,
        name text not null,
        status text not null default 'active',
        config jsonb not null default '{}',
        secrets jsonb not null default '{}',
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        deleted_at timestamptz null
      );
      create unique index channel_connections_name_key on channel_connections (organization_id, name) where deleted_at is null;
      create index channel_connections_org_idx on channel_connections (organization_id, created_at desc, id desc) where deleted_at is null;

      create table channel_deliveries (
        connection_id text not null references channel_connections (id),
        provider_message_id text not null,
        organization_id text not null,
        dedupe_key text not null,
        status text not null default 'sent',
        sent_at timestamptz not null default now(),
        delivered_at timestamptz null,
        read_at timestamptz null,
        error jsonb null,
        updated_at timestamptz not null default now(),
        primary key (connection_id, provider_message_id)
      );
      create unique index channel_deliveries_dedupe_key on channel_deliveries (organization_id, dedupe_key);

      create table channel_customer_windows (
        connection_id text not null references channel_connections (id),
        external_id text not null,
        last_inbound_at timestamptz not null,
        primary key (connection_id, external_id)
      );

      alter table workflows add column channel_connection_id text null;
    `);
  }
}
