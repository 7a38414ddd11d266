import { Migration } from '@mikro-orm/migrations';

/**
 * OAuth 2.0: registered clients (secret stored as a SHA-256 hash), the authorization
 * server's models (grants, codes, access and refresh tokens, sessions, interactions) as
 * one table keyed by (model, id), and the server's own keys (cookie signing, JWKS) so that
 * every process shares them and they survive restarts.
 */
export class Migration20261125000300_oauth extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table oauth_clients (
        id text primary key,
        organization_id text not null references organizations(id),
        name text not null,
        type text not null check (type in ('confidential', 'public')),
        redirect_uris jsonb not null,
        scopes jsonb not null,
        secret_hash text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        check ((type = 'confidential') = (secret_hash is not null))
      );
      create index oauth_clients_org_list_idx on oauth_clients (organization_id, created_at desc, id desc);

      create table oauth_models (
        model text not null,
        id text not null,
        payload jsonb not null,
        grant_id text,
        uid text,
        user_code text,
        client_id text,
        account_id text,
        expires_at timestamptz,
        consumed_at timestamptz,
        primary key (model, id)
      );
      create index oauth_models_grant_idx on oauth_models (grant_id) where grant_id is not null;
      create index oauth_models_uid_idx on oauth_models (uid) where uid is not null;
      create index oauth_models_client_idx on oauth_models (client_id) where client_id is not null;
      create index oauth_models_account_idx on oauth_models (account_id) where account_id is not null;
      create index oauth_models_expires_idx on oauth_models (expires_at);

      create table oauth_keys (
        name text primary key,
        value jsonb not null,
        created_at timestamptz not null default now()
      );
    `);
  }
}
