import { Migration } from '@mikro-orm/migrations';

/** Triggers and trigger executions (see src/modules/triggers). */
export class Migration20261122000400_triggers extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table triggers (
        id text primary key,
        organization_id text not null references organizations(id),
        workflow_id text not null references workflows(id),
        name text not null,
        type text not null check (type in ('message', 'schedule', 'webhook', 'api')),
        status text not null check (status in ('active', 'inactive', 'paused')),
        channel text not null,
        configuration jsonb not null,
        execution_count integer not null default 0,
        last_triggered timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        activated_at timestamptz,
        deactivated_at timestamptz,
        paused_at timestamptz,
        resumed_at timestamptz,
        deleted_at timestamptz
      );
      create unique index triggers_org_name_uniq on triggers (organization_id, name) where deleted_at is null;
      create index triggers_org_list_idx on triggers (organization_id, created_at desc, id desc) where deleted_at is null;
      -- Inbound message matching scans the active message triggers of one organization.
      create index triggers_org_active_message_idx on triggers (organization_id) where deleted_at is null and status = 'active' and type = 'message';

      create table trigger_executions (
        id text primary key,
        organization_id text not null references organizations(id),
        trigger_id text not null references triggers(id),
        workflow_id text not null,
        execution_id text,
        customer_id text,
        channel text not null,
        status text not null check (status in ('running', 'failed')),
        input jsonb not null,
        metadata jsonb not null default '{}',
        error_code text,
        error_message text,
        source_key text,
        triggered_at timestamptz not null default now(),
        completed_at timestamptz
      );
      create index trigger_executions_trigger_idx on trigger_executions (trigger_id, triggered_at desc, id desc);
      create index trigger_executions_execution_idx on trigger_executions (execution_id) where execution_id is not null;
      create unique index trigger_executions_source_uniq on trigger_executions (trigger_id, source_key) where source_key is not null;
    `);
  }
}
