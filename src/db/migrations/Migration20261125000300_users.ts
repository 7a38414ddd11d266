import { Migration } from '@mikro-orm/migrations';

/** People who sign in to consent to OAuth clients: email (unique per organization, case-insensitive), scrypt hash, role. */
export class Migration20261125000300_users extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table users (
        id text primary key,
        organization_id text not null references organizations(id),
        email text not null,
        password_hash text not null,
        role text not null check (role in ('read', 'read_write', 'admin')),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create unique index users_org_email_uniq on users (organization_id, lower(email));
      create index users_org_list_idx on users (organization_id, created_at desc, id desc);
    `);
  }
}
