/**
 * What the users API asks of whoever keeps people's consents to OAuth clients. The oauth
 * module supplies it (oauth-grants.ts), so users never imports oauth (oauth imports users).
 */
import type { Scope } from '../../credentials/scopes';

/** One person's consent to one OAuth client. */
export interface UserGrant {
  clientId: string;
  clientName: string;
  scopes: Scope[];
  grantedAt: Date;
  expiresAt: Date | null;
}

export interface UserGrants {
  /** The person's live grants, one per client, newest first. */
  list(userId: string): Promise<UserGrant[]>;
  /** Revokes the person's grants to one client (or to every client): returns how many ended. */
  revoke(userId: string, clientId?: string): Promise<number>;
  /** Deletes everything OAuth holds for a deleted person: grants, codes, tokens, sessions. */
  forgetUser(userId: string): Promise<void>;
}

/** What the users routes need beside the infrastructure. */
export interface UserServices {
  oauthGrants: UserGrants;
}
