/**
 * Owns the OAuth 2.0 authorization server: `oidc-provider` (certified, itself a Koa app)
 * configured for plain OAuth 2.0 with the authorization-code grant only.
 *
 * - Issuer = PUBLIC_BASE_URL; endpoints under /oauth; RFC 8414 discovery.
 * - Access tokens are opaque, 1 h, for one resource: this API (`<base>/v1`), carrying the
 *   granted scopes (resource indicators). Opaque tokens are rows in PostgreSQL, so a
 *   revocation deletes the row and every process stops accepting the token once its
 *   short in-process cache (≤ AUTH_CACHE_TTL_MS) lapses; a self-contained JWT would stay
 *   valid until its `exp` unless every process consulted a deny-list anyway.
 * - Refresh tokens for every code exchange (no offline_access needed), rotated on each
 *   use; reusing a rotated one revokes the whole grant (the provider's reuse detection).
 * - PKCE S256 required for public clients (auth method `none`), accepted for confidential.
 * - Client secrets are stored hashed; the provider compares presented secrets by hash.
 * - Granted scopes = requested ∩ client's ∩ user's role: the resource server offers only
 *   the client's scopes (client metadata `api_scopes`; requested scopes beyond them are
 *   dropped) and the consent step rejects what the role does not allow.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import type Provider from 'oidc-provider';
import type { Configuration, JWK, KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from '../../logger';
import type { Config } from '../../config';
import type { Orm } from '../../db/orm';
import { SCOPES } from '../../credentials/scopes';
import { parseTrustProxy } from '../../proxy-trust';
import { randomBase62 } from '../../ids';
import { User } from '../users/user.entity';
import { PgOAuthAdapter } from './oauth-adapter';
import { renderErrorPage } from './oauth-pages';

export const ACCESS_TOKEN_TTL_S = 3600;
const CODE_TTL_S = 60;
const REFRESH_TOKEN_TTL_S = 30 * 24 * 3600;
const GRANT_TTL_S = 365 * 24 * 3600;
const SESSION_TTL_S = 12 * 3600;
const INTERACTION_TTL_S = 600;

export const hashClientSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** The resource every access token is for: the /v1 API. */
export const apiResource = (config: Config) => `${config.BASE_URL}/v1`;

interface ServerKeys {
  cookieKeys: string[];
  jwks: { keys: JWK[] };
}

/** Keys shared by every process: created once (first process wins the insert), then read. */
async function loadKeys(orm: Orm): Promise<ServerKeys> {
  const conn = orm.em.getConnection();
  const [row] = await conn.execute<Array<{ value: ServerKeys }>>("select value from oauth_keys where name = 'server'");
  if (row) return row.value;
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const generated: ServerKeys = {
    cookieKeys: [randomBase62(43)],
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: randomBase62(16), alg: 'ES256', use: 'sig' } as JWK] },
  };
  await conn.execute("insert into oauth_keys (name, value) values ('server', ?) on conflict (name) do nothing", [JSON.stringify(generated)]);
  const [stored] = await conn.execute<Array<{ value: ServerKeys }>>("select value from oauth_keys where name = 'server'");
  return stored!.value;
}

export interface OAuthServer {
  provider: Provider;
  resource: string;
  /** Signs interaction ids into the sign-in and consent forms' CSRF tokens. */
  cookieKey: string;
}

/**
 * Loads oidc-provider with its one load-time notice routed through our logger. On Node 20
 * (what these machines run; it works there) it prints "Unsupported runtime" with
 * console.warn, which would be the one line of the process output that is not JSON.
 */
function loadOidcProvider(logger: Logger): typeof import('oidc-provider') {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => logger.warn({ component: 'oidc-provider' }, args.map(String).join(' '));
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('oidc-provider') as typeof import('oidc-provider');
  } finally {
    console.warn = warn;
  }
}

export async function createOAuthServer(config: Config, orm: Orm, logger: Logger): Promise<OAuthServer> {
  const { default: Provider, errors } = loadOidcProvider(logger);
  const keys = await loadKeys(orm);
  const resource = apiResource(config);
  const configuration: Configuration = {
    adapter: (name: string) => new PgOAuthAdapter(name, orm),
    clients: [],
    // The server's only signing key is ES256 (nothing it issues is signed in plain OAuth 2.0, but clients must name an algorithm it has).
    clientDefaults: { id_token_signed_response_alg: 'ES256', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
    async findAccount(_ctx, sub) {
      const user = await orm.em.fork().findOne(User, { id: sub });
      return user ? { accountId: user.id, claims: () => ({ sub: user.id }) } : undefined;
    },
    jwks: keys.jwks,
    cookies: { keys: keys.cookieKeys },
    routes: {
      authorization: '/oauth/authorize',
      token: '/oauth/token',
      revocation: '/oauth/revoke',
      introspection: '/oauth/introspect',
      jwks: '/oauth/jwks',
      end_session: '/oauth/session/end',
      userinfo: '/oauth/userinfo',
    },
    responseTypes: ['code'],
    clientAuthMethods: ['client_secret_post', 'client_secret_basic', 'none'],
    allowOmittingSingleRegisteredRedirectUri: false,
    pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      // A client may only introspect or revoke its own tokens: clients of other organizations learn nothing.
      introspection: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
      revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo(ctx, indicator, client) {
          if (indicator !== resource) throw new errors.InvalidTarget();
          const allowed = new Set(((client as unknown as { api_scopes?: string }).api_scopes ?? '').split(' '));
          return {
            scope: SCOPES.filter((s) => allowed.has(s)).join(' '),
            audience: resource,
            accessTokenTTL: ACCESS_TOKEN_TTL_S,
            accessTokenFormat: 'opaque',
          };
        },
      },
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: CODE_TTL_S,
      RefreshToken: REFRESH_TOKEN_TTL_S,
      Grant: GRANT_TTL_S,
      Session: SESSION_TTL_S,
      Interaction: INTERACTION_TTL_S,
    },
    // Plain OAuth 2.0: every code exchange gets a refresh token, and tokens outlive the browser session.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    expiresWithSession: async () => false,
    extraClientMetadata: { properties: ['api_scopes'] },
    interactions: { url: (_ctx, interaction) => `/oauth/interaction/${interaction.uid}` },
    renderError: async (ctx: KoaContextWithOIDC, out) => {
      ctx.type = 'html';
      ctx.body = renderErrorPage(out.error, out.error_description);
    },
    clockTolerance: 5,
  };
  const provider = new Provider(config.BASE_URL, configuration);
  // Behind the proxies TRUST_PROXY names, like the Koa app itself (which drops the headers of any other sender).
  provider.proxy = parseTrustProxy(config.TRUST_PROXY).kind !== 'none';
  // Stored secrets are SHA-256 hashes of 32 random bytes: compare hashes in constant time.
  provider.Client.prototype.compareClientSecret = function compare(this: { clientSecret?: string }, actual: string) {
    const expected = Buffer.from(this.clientSecret ?? '', 'hex');
    const given = Buffer.from(hashClientSecret(actual), 'hex');
    return expected.length === given.length && timingSafeEqual(expected, given);
  };
  return { provider, resource, cookieKey: keys.cookieKeys[0]! };
}
