/**
 * The oauth module's own state, built once per API process (src/app.ts); a worker builds
 * none of it: the authorization server, the verifier of its access tokens (one of the
 * API's credential verifiers) and people's grants.
 *
 * The authorization server (oidc-provider and its keys) is built at its first use: the
 * first request under /oauth or the first OAuth token to verify. Most processes of the
 * test suite never use it, and building it was about 130 ms of each test file's start.
 */
import type { Services } from '../../services';
import { OAuthGrantService } from './oauth-grants';
import { apiResource, createOAuthServer, type OAuthServer } from './oauth-provider';
import { OAuthTokenVerifier } from './oauth-token-verifier';

export interface OAuthState {
  /** The authorization server, built at the first call (a failed build is tried again at the next). */
  oauth: () => Promise<OAuthServer>;
  oauthTokens: OAuthTokenVerifier;
  /** People's OAuth grants: listed and revoked by the grants page and the users API. */
  oauthGrants: OAuthGrantService;
}

export type OAuthServices = Services & OAuthState;

/** `build` run at the first call and its result kept; a failure is not kept, so the next call builds again. */
export function builtOnFirstUse<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () =>
    (built ??= build().catch((err: unknown) => {
      built = undefined;
      throw err;
    }));
}

export async function createOAuthState(services: Services): Promise<OAuthState> {
  const { config, orm, logger } = services;
  const resource = apiResource(config);
  const oauth = builtOnFirstUse(async () => {
    const server = await createOAuthServer(config, orm, logger);
    server.provider.on('access_token.destroyed', (token) => oauthTokens.forget(token.jti));
    server.provider.on('grant.revoked', (_ctx, grantId) => oauthTokens.forgetGrant(grantId));
    server.provider.on('server_error', (_ctx, err) => logger.error({ err }, 'oauth server error'));
    return server;
  });
  const oauthTokens = new OAuthTokenVerifier(async () => (await oauth()).provider, resource, orm, config.AUTH_CACHE_TTL_MS);
  return { oauth, oauthTokens, oauthGrants: new OAuthGrantService(orm, oauthTokens, resource) };
}
