import { Migration } from '@mikro-orm/migrations';

/**
 * Data exports and custom reports (see src/modules/reports): one row per request, the
 * PostgreSQL record the API serves while a Temporal workflow writes the file. The partial
 * indexes keep the expiry sweep to the completed rows.
 */
export class Migration20261125000400_reports_exports extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table exports (
        id text primary key,
        organization_id text not null references organizations(id),
        data_type text not null,
        format text not null check (format in ('csv', 'json', 'xlsx')),
        request jsonb not null,
        include_metadata boolean not null default false,
        status text not null check (status in ('processing', 'completed', 'failed', 'expired')),
        rows_total integer,
        rows_written integer not null default 0,
        file_key text,
        file_size bigint,
        error_message text,
        created_at timestamptz not null default now(),
        completed_at timestamptz,
        expires_at timestamptz
      );
      create index exports_org_list_idx on exports (organization_id, created_at desc, id desc);
      create index exports_expiry_idx on exports (expires_at) where status = 'completed';

      create table reports (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        description text,
        format text not null check (format in ('csv', 'json', 'pdf')),
        request jsonb not null,
        status text not null check (status in ('generating', 'completed', 'failed', 'expired')),
        file_key text,
        file_size bigint,
        error_message text,
        created_at timestamptz not null default now(),
        completed_at timestamptz,
        expires_at timestamptz
      );
      create index reports_org_list_idx on reports (organization_id, created_at desc, id desc);
      create index reports_expiry_idx on reports (expires_at) where status = 'completed';
    `);
  }
}
