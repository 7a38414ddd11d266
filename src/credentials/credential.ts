/**
 * Owns the contract between the HTTP layer and the credential kinds: what an authenticated
 * caller is (`Credential`), what each kind supplies to recognise and verify its Bearer
 * tokens (`CredentialVerifier`), and how a verifier says no (`CredentialRefused`, which
 * src/http/auth.ts turns into the 401/403 with its RFC 6750 challenge).
 */
import type { Permission, Scope } from './scopes';

export interface Credential {
  type: 'api_key' | 'oauth' | 'jwt';
  /** API key id, OAuth grant id (one user's consent to one client) or JWT application id. */
  id: string;
  name: string;
  organizationId: string;
  /** The API key's level or the OAuth user's role; null for a JWT application. */
  permission: Permission | null;
  scopes: ReadonlySet<Scope>;
  /** Whom rate limits count against: the key, the grant (user × client) or the application. */
  limitSubject: string;
  /** JWT `sub` or the OAuth user id: logged with each request. */
  subject?: string;
  clientId?: string;
  userId?: string;
  expiresAt?: Date;
}

/** One kind of Bearer credential (API key, OAuth access token, JWT). */
export interface CredentialVerifier {
  /** Whether the token has this kind's shape; the first verifier that accepts it decides. */
  accepts(token: string): boolean;
  /**
   * The token's credential, or throws `CredentialRefused`. May answer synchronously (a
   * cached API key), so the hottest path costs no promise.
   */
  verify(token: string): Credential | Promise<Credential>;
}

/**
 * `invalid_api_key`: an unknown or revoked API key; `invalid_token`: any other refused
 * token; `insufficient_scope`: a valid token that claims more than it may (`scope` names it).
 */
export type RefusalReason = 'invalid_api_key' | 'invalid_token' | 'insufficient_scope';

export class CredentialRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
    readonly scope?: string,
  ) {
    super(message);
    this.name = 'CredentialRefused';
  }
}

export const invalidToken = (message = 'Access token is invalid or expired') => new CredentialRefused('invalid_token', message);
