import { Migration } from '@mikro-orm/migrations';

/** Organizations, API keys, idempotency records, workflows and their revisions. */
export class Migration20261122000001_foundation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table organizations (
        id text primary key,
        name text not null unique,
        created_at timestamptz not null default now()
      );

      create table api_keys (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        permission text not null check (permission in ('read', 'read_write', 'admin')),
        key_hash text not null unique,
        prefix text not null,
        last_four text not null,
        created_at timestamptz not null default now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      create index api_keys_org_idx on api_keys (organization_id, created_at desc);

      create table idempotency_keys (
        organization_id text not null,
        key text not null,
        request_hash text not null,
        status_code integer,
        response_body jsonb,
        created_at timestamptz not null default now(),
        primary key (organization_id, key)
      );
      create index idempotency_keys_created_idx on idempotency_keys (created_at);

      create table workflows (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        description text not null default '',
        status text not null check (status in ('draft', 'active', 'inactive')),
        channel text not null,
        configuration jsonb,
        revision integer not null default 0,
        execution_count integer not null default 0,
        success_count integer not null default 0,
        failure_count integer not null default 0,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        activated_at timestamptz,
        deactivated_at timestamptz,
        deleted_at timestamptz
      );
      create unique index workflows_org_name_uniq on workflows (organization_id, name) where deleted_at is null;
      create index workflows_org_list_idx on workflows (organization_id, created_at desc, id desc) where deleted_at is null;

      create table workflow_revisions (
        id text primary key,
        workflow_id text not null references workflows(id) deferrable initially deferred,
        revision integer not null,
        configuration jsonb not null,
        created_at timestamptz not null default now(),
        unique (workflow_id, revision)
      );
    `);
  }
}
