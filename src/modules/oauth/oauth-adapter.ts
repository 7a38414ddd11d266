/**
 * Owns the authorization server's storage: an oidc-provider adapter over PostgreSQL.
 * Every model (Grant, AuthorizationCode, AccessToken, RefreshToken, Session, Interaction)
 * is one row of `oauth_models` keyed by (model, id), with the columns the provider looks
 * things up by (grant, uid) and the ones we revoke by (client, account). Expired rows
 * read as absent and are deleted by `purgeExpiredOAuthModels`. The `Client` model is
 * read from `oauth_clients`, the table admins manage through `/v1/oauth-clients`.
 */
import type { Adapter, AdapterPayload, ClientMetadata } from 'oidc-provider';
import type { Orm } from '../../db/orm';
import { OAuthClient } from './oauth-client.entity';

type Row = { payload: AdapterPayload; consumed_at: Date | null };

export function clientMetadata(c: OAuthClient): ClientMetadata {
  return {
    client_id: c.id,
    client_name: c.name,
    // The provider compares presented secrets against this through our compareClientSecret (a hash comparison).
    ...(c.secretHash ? { client_secret: c.secretHash } : {}),
    redirect_uris: c.redirectUris,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: c.type === 'public' ? 'none' : 'client_secret_post',
    // Not `scope`: that metadata may only name the provider's OpenID scopes. These are the API's (see getResourceServerInfo).
    api_scopes: c.scopes.join(' '),
  };
}

export class PgOAuthAdapter implements Adapter {
  constructor(
    private readonly model: string,
    private readonly orm: Orm,
  ) {}

  private exec<T = Row>(sql: string, params: unknown[]): Promise<T[]> {
    return this.orm.em.getConnection().execute(sql, params) as Promise<T[]>;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    await this.exec(
      `insert into oauth_models (model, id, payload, grant_id, uid, user_code, client_id, account_id, expires_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, case when ?::int is null then null else now() + make_interval(secs => ?::int) end)
       on conflict (model, id) do update set payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
         user_code = excluded.user_code, client_id = excluded.client_id, account_id = excluded.account_id, expires_at = excluded.expires_at`,
      [
        this.model,
        id,
        JSON.stringify(payload),
        payload.grantId ?? null,
        payload.uid ?? null,
        payload.userCode ?? null,
        payload.clientId ?? null,
        payload.accountId ?? null,
        expiresIn ?? null,
        expiresIn ?? null,
      ],
    );
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (this.model === 'Client') return this.findClient(id);
    return this.first('id = ?', id);
  }

  findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.first('uid = ?', uid);
  }

  findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.first('user_code = ?', userCode);
  }

  async consume(id: string): Promise<void> {
    await this.exec('update oauth_models set consumed_at = now() where model = ? and id = ?', [this.model, id]);
  }

  async destroy(id: string): Promise<void> {
    await this.exec('delete from oauth_models where model = ? and id = ?', [this.model, id]);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.exec('delete from oauth_models where grant_id = ?', [grantId]);
  }

  private async first(where: string, value: string): Promise<AdapterPayload | undefined> {
    const [row] = await this.exec(
      `select payload, consumed_at from oauth_models where model = ? and ${where} and (expires_at is null or expires_at > now())`,
      [this.model, value],
    );
    if (!row) return undefined;
    return row.consumed_at ? { ...row.payload, consumed: Math.floor(new Date(row.consumed_at).getTime() / 1000) } : row.payload;
  }

  private async findClient(id: string): Promise<AdapterPayload | undefined> {
    if (id.length > 64) return undefined;
    const client = await this.orm.em.fork().findOne(OAuthClient, { id });
    return client ? (clientMetadata(client) as AdapterPayload) : undefined;
  }
}

/** Deletes expired models (codes, tokens, sessions, interactions); returns how many. */
export async function purgeExpiredOAuthModels(orm: Orm): Promise<number> {
  const res = await orm.em.getConnection().execute('delete from oauth_models where expires_at < now()', [], 'run');
  return (res as { affectedRows?: number }).affectedRows ?? 0;
}

/** Revokes everything issued to a client, or on behalf of a user (codes, tokens, grants; a user's sessions too). */
export async function revokeOAuthModels(orm: Orm, by: { clientId: string } | { accountId: string }): Promise<void> {
  const [column, value] = 'clientId' in by ? ['client_id', by.clientId] : ['account_id', by.accountId];
  await orm.em.getConnection().execute(`delete from oauth_models where ${column} = ?`, [value]);
}
