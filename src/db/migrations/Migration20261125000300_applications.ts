import { Migration } from '@mikro-orm/migrations';

/** JWT applications: each registers its public keys (inline JWK set or a jwks_uri) and the scopes its tokens may carry. */
export class Migration20261125000300_applications extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table applications (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        scopes jsonb not null,
        jwks jsonb,
        jwks_uri text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        check ((jwks is null) <> (jwks_uri is null))
      );
      create unique index applications_org_name_uniq on applications (organization_id, name);
      create index applications_org_list_idx on applications (organization_id, created_at desc, id desc);
    `);
  }
}
