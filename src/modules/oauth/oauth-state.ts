/**
 * The oauth module's own state, built once per API process (src/app.ts); a worker builds
 * none of it: the authorization server, the verifier of its access tokens (one of the
 * API's credential verifiers) and people's grants.
 */
import type { Services } from '../../services';
import { OAuthGrantService } from './oauth-grants';
import { createOAuthServer, type OAuthServer } from './oauth-provider';
import { OAuthTokenVerifier } from './oauth-token-verifier';

export interface OAuthState {
  oauth: OAuthServer;
  oauthTokens: OAuthTokenVerifier;
  /** People's OAuth grants: listed and revoked by the grants page and the users API. */
  oauthGrants: OAuthGrantService;
}

export type OAuthServices = Services & OAuthState;

export async function createOAuthState(services: Services): Promise<OAuthState> {
  const { config, orm, logger } = services;
  const oauth = await createOAuthServer(config, orm, logger);
  const oauthTokens = new OAuthTokenVerifier(oauth.provider, oauth.resource, orm, config.AUTH_CACHE_TTL_MS);
  oauth.provider.on('access_token.destroyed', (token) => oauthTokens.forget(token.jti));
  oauth.provider.on('grant.revoked', (_ctx, grantId) => oauthTokens.forgetGrant(grantId));
  return { oauth, oauthTokens, oauthGrants: new OAuthGrantService(orm, oauthTokens, oauth.resource) };
}
