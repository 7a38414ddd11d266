/**
 * Owns the use of OAuth access tokens on /v1. Tokens are opaque: each is a row the
 * provider finds in PostgreSQL (expired, revoked or grant-revoked tokens are gone). A
 * verified token is cached in-process for AUTH_CACHE_TTL_MS (≤ 1 s), which bounds how
 * late a revocation bites in any process. The effective scopes are the token's, cut to
 * the user's current role and the client's current scopes, so demoting a user narrows
 * their tokens at once; a deleted user, client or grant ends them.
 */
import { hash } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { Orm } from '../../db/orm';
import { type Credential, type CredentialVerifier, invalidToken } from '../../credentials/credential';
import { PERMISSION_SCOPES, SCOPES } from '../../credentials/scopes';
import { User } from '../users/user.entity';
import { OAuthClient } from './oauth-client.entity';

const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{20,256}$/;
const MAX_CACHE_ENTRIES = 10_000;

export class OAuthTokenVerifier implements CredentialVerifier {
  private readonly cache = new Map<string, { credential: Credential | null; expiresAt: number }>();

  constructor(
    /** The authorization server's provider, built at its first use (oauth-state.ts). */
    private readonly provider: () => Promise<Provider>,
    private readonly resource: string,
    private readonly orm: Orm,
    private readonly ttlMs: number,
  ) {}

  accepts(token: string): boolean {
    return OPAQUE_TOKEN.test(token);
  }

  async verify(token: string): Promise<Credential> {
    const key = hash('sha256', token, 'hex');
    const now = Date.now();
    let entry = this.cache.get(key);
    if (!entry || entry.expiresAt <= now) {
      entry = { credential: await this.load(token), expiresAt: now + this.ttlMs };
      if (this.ttlMs > 0) {
        if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
        this.cache.set(key, entry);
      }
    }
    const credential = entry.credential;
    if (!credential || (credential.expiresAt && credential.expiresAt.getTime() <= now)) throw invalidToken();
    return credential;
  }

  /** Forgets a revoked token at once in this process (other processes follow within the TTL). */
  forget(token: string): void {
    this.cache.delete(hash('sha256', token, 'hex'));
  }

  /** Forgets every cached token of a revoked grant (refresh-token reuse, code reuse, revocation of a refresh token). */
  forgetGrant(grantId: string): void {
    for (const [key, entry] of this.cache) if (entry.credential?.id === grantId) this.cache.delete(key);
  }

  private async load(token: string): Promise<Credential | null> {
    const provider = await this.provider();
    const at = await provider.AccessToken.find(token);
    if (!at || at.isExpired || !at.accountId || !at.grantId) return null;
    const audiences = Array.isArray(at.aud) ? at.aud : [at.aud];
    if (!audiences.includes(this.resource)) return null;
    const em = this.orm.em.fork();
    // The grant too: a token minted by a refresh that raced its grant's revocation dies with the grant.
    const [client, user, grant] = await Promise.all([
      em.findOne(OAuthClient, { id: at.clientId }),
      em.findOne(User, { id: at.accountId }),
      provider.Grant.find(at.grantId),
    ]);
    if (!client || !user || !grant || user.organizationId !== client.organizationId) return null;
    const role = PERMISSION_SCOPES[user.role];
    const tokenScopes = new Set((at.scope ?? '').split(' '));
    return {
      type: 'oauth',
      id: at.grantId,
      name: client.name,
      organizationId: client.organizationId,
      permission: user.role,
      scopes: new Set(SCOPES.filter((s) => tokenScopes.has(s) && role.has(s) && client.scopes.includes(s))),
      // Per user × client, so a refreshed token keeps counting against the same 1000/h.
      limitSubject: `oauth:${client.id}:${user.id}`,
      subject: user.id,
      clientId: client.id,
      userId: user.id,
      expiresAt: new Date(at.exp! * 1000),
    };
  }
}
