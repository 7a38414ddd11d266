import { Migration } from '@mikro-orm/migrations';

/**
 * Dry runs (src/modules/dry-runs): recorded executions replayed against a draft or an older
 * revision with no side effects. `dry_runs` is the record the API serves (with the
 * configuration it ran, frozen at creation); `dry_run_items` one row per replayed
 * execution with its outcome and diff. The dry run's own transcript lives in
 * `dry_run_steps` and `dry_run_messages`, never in `execution_steps` / `messages`, so the
 * analytics row triggers on those tables never see a dry run. Their primary keys make an
 * activity retried after a worker crash record a step or a message once.
 */
export class Migration20261126000200_dry_runs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table dry_runs (
        id text primary key,
        organization_id text not null references organizations(id),
        workflow_id text not null references workflows(id),
        revision text not null,
        configuration jsonb not null,
        status text not null check (status in ('pending', 'running', 'completed', 'failed')),
        error_message text,
        created_at timestamptz not null default now(),
        started_at timestamptz,
        completed_at timestamptz,
        temporal_started_at timestamptz
      );
      create index dry_runs_unstarted_idx on dry_runs (created_at) where temporal_started_at is null;
      create index dry_runs_workflow_idx on dry_runs (organization_id, workflow_id, created_at desc, id desc);

      create table dry_run_items (
        dry_run_id text not null references dry_runs(id) on delete cascade,
        execution_id text not null references executions(id),
        position integer not null,
        status text not null check (status in ('pending', 'success', 'failed', 'waiting_for_input')),
        output jsonb,
        error_type text,
        error_message text,
        diff jsonb,
        completed_at timestamptz,
        primary key (dry_run_id, execution_id)
      );

      create table dry_run_steps (
        dry_run_id text not null,
        execution_id text not null,
        node_id text not null,
        type text not null,
        status text not null,
        input jsonb not null,
        output jsonb not null,
        error_type text,
        error_message text,
        started_at timestamptz not null,
        seq bigint generated always as identity,
        primary key (dry_run_id, execution_id, node_id),
        foreign key (dry_run_id, execution_id) references dry_run_items(dry_run_id, execution_id) on delete cascade
      );

      create table dry_run_messages (
        dry_run_id text not null,
        execution_id text not null,
        dedupe_key text not null,
        node_id text not null,
        text text not null,
        seq bigint generated always as identity,
        primary key (dry_run_id, dedupe_key),
        foreign key (dry_run_id, execution_id) references dry_run_items(dry_run_id, execution_id) on delete cascade
      );
    `);
  }
}
