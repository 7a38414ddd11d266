/**
 * OpenAPI entries for the authorization server's endpoints (served by oidc-provider, not
 * by `defineRoute`): form-encoded requests, RFC 6749 answers and errors.
 */
import { type OpenAPIRegistry, type ResponseHeaderName, responseHeaders } from '../../http/openapi';
import { z } from '../../http/zod';

const OAuthError = z
  .object({
    error: z.string().openapi({ example: 'invalid_grant', description: 'RFC 6749 §5.2: invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope' }),
    error_description: z.string().optional(),
  })
  .openapi('OAuthError');

const TokenOut = z
  .object({
    access_token: z.string().openapi({ description: 'Opaque; use as `Authorization: Bearer <token>` on /v1' }),
    token_type: z.literal('Bearer'),
    expires_in: z.literal(3600),
    refresh_token: z.string().openapi({ description: 'Rotates on every use; reusing an old one revokes the whole grant' }),
    scope: z.string().openapi({ example: 'workflows:read workflows:write' }),
  })
  .openapi('OAuthToken');

const TokenForm = z
  .object({
    grant_type: z.enum(['authorization_code', 'refresh_token']),
    code: z.string().optional(),
    redirect_uri: z.string().optional().openapi({ description: 'The exact redirect_uri of the authorization request' }),
    code_verifier: z.string().optional().openapi({ description: 'PKCE; required for public clients' }),
    refresh_token: z.string().optional(),
    client_id: z.string(),
    client_secret: z.string().optional().openapi({ description: 'Confidential clients (or HTTP Basic)' }),
  })
  .openapi('OAuthTokenRequest');

const form = (schema: z.ZodType) => ({ content: { 'application/x-www-form-urlencoded': { schema } }, required: true });
/** What oidc-provider adds to its JSON answers: CORS for browser clients, and no-store where tokens may appear. */
const CORS: ResponseHeaderName[] = ['Access-Control-Allow-Origin', 'Access-Control-Expose-Headers'];
const NO_STORE: ResponseHeaderName[] = [...CORS, 'Cache-Control'];
/** What /oauth/revoke and /oauth/introspect answer to a request that is not a well-formed form (a body is always required). */
const BAD_FORM =
  'invalid_request: no body or no client credentials, no `token`, a parameter given twice, or a body that is not application/x-www-form-urlencoded';
const oauthError = (description: string, headers: ResponseHeaderName[]) => ({ description, headers: responseHeaders(headers), content: { 'application/json': { schema: OAuthError } } });

export function registerOAuthDocs(registry: OpenAPIRegistry): void {
  const tags = ['OAuth 2.0'];
  registry.registerPath({
    method: 'get',
    path: '/oauth/authorize',
    operationId: 'oauthAuthorize',
    summary: 'Start the authorization-code flow (a browser page: sign-in, then consent)',
    description: 'Redirects to `redirect_uri` with `code` and `state` (or `error`, e.g. `access_denied` when the user denies). An unregistered redirect_uri is never redirected to.',
    tags,
    security: [],
    request: {
      query: z.object({
        response_type: z.literal('code'),
        client_id: z.string(),
        redirect_uri: z.string(),
        scope: z.string().openapi({ example: 'workflows:read workflows:write' }),
        state: z.string(),
        code_challenge: z.string().optional().openapi({ description: 'PKCE S256; required for public clients' }),
        code_challenge_method: z.literal('S256').optional(),
      }),
    },
    responses: {
      303: {
        description: 'To the sign-in page, or back to the client',
        headers: responseHeaders(['Cache-Control', 'Location'], ['Set-Cookie']),
        content: { 'text/html': { schema: z.string() } },
      },
      400: {
        description: 'An HTML error page (unknown client, unregistered redirect_uri), or with response_mode=form_post an error for the client as a self-submitting form',
        headers: responseHeaders(['Cache-Control']),
        content: { 'text/html': { schema: z.string() } },
      },
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/oauth/token',
    operationId: 'oauthToken',
    summary: 'Exchange a code, or a refresh token, for tokens',
    tags,
    security: [],
    request: { body: form(TokenForm) },
    responses: {
      200: { description: 'Tokens', headers: responseHeaders(NO_STORE), content: { 'application/json': { schema: TokenOut } } },
      400: oauthError('invalid_request | invalid_grant (reused, expired or foreign code; wrong redirect_uri or code_verifier; reused refresh token) | invalid_scope', NO_STORE),
      401: oauthError('invalid_client', NO_STORE),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/oauth/revoke',
    operationId: 'oauthRevoke',
    summary: 'Revoke an access or refresh token (RFC 7009); effective within a second in every process',
    description: 'Revoking a refresh token revokes its whole grant, access tokens included. Always 200 for a well-formed request.',
    tags,
    security: [],
    request: { body: form(z.object({ token: z.string(), token_type_hint: z.enum(['access_token', 'refresh_token']).optional(), client_id: z.string(), client_secret: z.string().optional() })) },
    responses: {
      200: { description: 'Revoked (or unknown)', headers: responseHeaders(CORS) },
      400: oauthError(BAD_FORM, CORS),
      401: oauthError('invalid_client', CORS),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/oauth/introspect',
    operationId: 'oauthIntrospect',
    summary: 'Describe a token issued to the calling client (RFC 7662)',
    tags,
    security: [],
    request: { body: form(z.object({ token: z.string(), client_id: z.string(), client_secret: z.string().optional() })) },
    responses: {
      200: {
        description: '`{active: false}` for an unknown, expired or revoked token',
        headers: responseHeaders(NO_STORE),
        content: {
          'application/json': {
            schema: z.object({ active: z.boolean(), client_id: z.string().optional(), sub: z.string().optional(), scope: z.string().optional(), exp: z.number().int().optional(), token_type: z.string().optional() }),
          },
        },
      },
      400: oauthError(BAD_FORM, NO_STORE),
      401: oauthError('invalid_client', NO_STORE),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/.well-known/oauth-authorization-server',
    operationId: 'oauthMetadata',
    summary: 'Authorization server metadata (RFC 8414); the issuer is PUBLIC_BASE_URL',
    tags,
    security: [],
    responses: { 200: { description: 'Metadata', headers: responseHeaders(['Access-Control-Allow-Origin']), content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } } },
  });
}
