/**
 * Owns a person's OAuth grants: which applications they approved, with what scopes, and
 * revoking them. A grant here is one person's consent to one application (user × client):
 * the provider may hold several Grant rows for that pair (one per browser session that
 * consented), and they are listed and revoked together, so revoking an app really ends
 * its access. Revoking deletes the grants with their codes, access and refresh tokens;
 * refresh fails at once, and access tokens fail in every process once their short
 * in-process cache lapses (≤ AUTH_CACHE_TTL_MS, at most a second).
 */
import type { Orm } from '../../db/orm';
import { SCOPES } from '../../credentials/scopes';
import type { UserGrant, UserGrants } from '../users/user-grants';
import { revokeOAuthModels } from './oauth-adapter';
import type { OAuthTokenVerifier } from './oauth-token-verifier';

/** The models a grant carries (constants, written into the SQL); a Session (the person's sign-in) is not one of them. */
const GRANT_MODELS = "('Grant', 'AuthorizationCode', 'AccessToken', 'RefreshToken')";

export class OAuthGrantService implements UserGrants {
  constructor(
    private readonly orm: Orm,
    private readonly tokens: OAuthTokenVerifier,
    /** The API resource whose scopes the grants hold. */
    private readonly resource: string,
  ) {}

  /** The person's live grants, one per application, newest first. */
  async list(userId: string): Promise<UserGrant[]> {
    const rows = await this.orm.em.getConnection().execute<
      Array<{ client_id: string; client_name: string; payload: { iat?: number; resources?: Record<string, string> }; expires_at: Date | null }>
    >(
      `select g.client_id, c.name as client_name, g.payload, g.expires_at
         from oauth_models g join oauth_clients c on c.id = g.client_id
        where g.model = 'Grant' and g.account_id = ? and (g.expires_at is null or g.expires_at > now())`,
      [userId],
    );
    const byClient = new Map<string, { name: string; scopes: Set<string>; grantedAt: number; expiresAt: number | null }>();
    for (const row of rows) {
      const entry = byClient.get(row.client_id) ?? { name: row.client_name, scopes: new Set<string>(), grantedAt: Infinity, expiresAt: 0 };
      for (const s of (row.payload.resources?.[this.resource] ?? '').split(' ')) if (s) entry.scopes.add(s);
      entry.grantedAt = Math.min(entry.grantedAt, (row.payload.iat ?? 0) * 1000);
      entry.expiresAt = row.expires_at === null || entry.expiresAt === null ? null : Math.max(entry.expiresAt, new Date(row.expires_at).getTime());
      byClient.set(row.client_id, entry);
    }
    return [...byClient]
      .map(([clientId, e]) => ({
        clientId,
        clientName: e.name,
        scopes: SCOPES.filter((s) => e.scopes.has(s)),
        grantedAt: new Date(e.grantedAt),
        expiresAt: e.expiresAt === null ? null : new Date(e.expiresAt),
      }))
      .sort((a, b) => b.grantedAt.getTime() - a.grantedAt.getTime() || a.clientId.localeCompare(b.clientId));
  }

  /**
   * Revokes the person's grants to one application (or to every application): returns how
   * many grants ended. Tokens are deleted by grant as well as by owner, so none outlives it.
   */
  async revoke(userId: string, clientId?: string): Promise<number> {
    const byClient = clientId === undefined ? '' : ' and client_id = ?';
    const params = clientId === undefined ? [userId] : [userId, clientId];
    const deleted = await this.orm.em.getConnection().execute<Array<{ model: string; id: string }>>(
      `with grants as (select id from oauth_models where model = 'Grant' and account_id = ?${byClient})
       delete from oauth_models
        where (grant_id in (select id from grants) or (model = 'Grant' and id in (select id from grants)))
           or (account_id = ?${byClient} and model in ${GRANT_MODELS})
       returning model, id`,
      [...params, ...params],
    );
    const grantIds = deleted.filter((r) => r.model === 'Grant').map((r) => r.id);
    // This process refuses the tokens at once; the others once their cache lapses.
    for (const id of grantIds) this.tokens.forgetGrant(id);
    return grantIds.length;
  }

  async forgetUser(userId: string): Promise<void> {
    await revokeOAuthModels(this.orm, { accountId: userId });
  }
}
