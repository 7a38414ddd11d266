/** `/v1/oauth-clients` (admin only): register, list, read, delete OAuth clients and rotate their secrets. */
import { SCOPES } from '../../credentials/scopes';
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut, paginationQuery } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { CLIENT_TYPES, type OAuthClient } from './oauth-client.entity';
import { OAuthClientService } from './oauth-client.service';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** HTTPS, or plain HTTP on loopback only (native apps, RFC 8252); never a fragment. */
const RedirectUri = z
  .url()
  .max(2048)
  .refine((raw) => {
    const url = new URL(raw);
    return !url.hash && !url.username && (url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)));
  }, 'redirect URIs must be https (or http on localhost) without a fragment')
  .openapi({ example: 'https://app.example.com/oauth/callback' });

const OAuthClientIn = z
  .strictObject({
    name: z.string().trim().min(1).max(200).openapi({ description: 'Shown to users on the consent page' }),
    type: z.enum(CLIENT_TYPES).openapi({ description: 'confidential: has a secret (client_secret_post or _basic); public: no secret, PKCE S256 required' }),
    redirect_uris: z.array(RedirectUri).min(1).max(10).openapi({ description: 'Matched exactly' }),
    scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length).openapi({ description: 'The most this client may be granted' }),
  })
  .openapi('OAuthClientCreate');

const OAuthClientOut = z
  .object({
    id: z.string(),
    client_id: z.string().openapi({ description: 'Same as id; the OAuth `client_id`' }),
    name: z.string(),
    type: z.enum(CLIENT_TYPES),
    redirect_uris: z.array(z.string()),
    scopes: z.array(z.enum(SCOPES)),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi('OAuthClient');

const OAuthClientWithSecretOut = OAuthClientOut.extend({
  client_secret: z.string().nullable().openapi({ description: 'Shown only in this response; null for public clients' }),
}).openapi('OAuthClientWithSecret');

const ClientIdParams = z.object({ client_id: z.string().max(64) });

const toOut = (c: OAuthClient): z.output<typeof OAuthClientOut> => ({
  id: c.id,
  client_id: c.id,
  name: c.name,
  type: c.type,
  redirect_uris: c.redirectUris,
  scopes: c.scopes,
  created_at: c.createdAt.toISOString(),
  updated_at: c.updatedAt.toISOString(),
});

export function oauthClientRoutes(services: Services): AnyRoute[] {
  const svc = () => new OAuthClientService(services.orm.em.fork(), services.orm);
  const tag = 'OAuth clients';
  const NOT_FOUND: [number, string] = [404, 'OAUTH_CLIENT_NOT_FOUND'];
  return [
    defineRoute({
      method: 'post',
      path: '/v1/oauth-clients',
      operationId: 'createOAuthClient',
      summary: 'Register an OAuth client; a confidential client’s secret is returned only in this response',
      tag,
      scope: 'admin',
      body: OAuthClientIn,
      status: 201,
      response: z.object({ data: OAuthClientWithSecretOut }),
      async handler({ body, credential }) {
        const { client, secret } = await svc().create(credential.organizationId, body);
        return { data: { ...toOut(client), client_secret: secret } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/oauth-clients',
      operationId: 'listOAuthClients',
      summary: 'List OAuth clients (never their secrets)',
      tag,
      scope: 'admin',
      query: z.strictObject(paginationQuery),
      response: z.object({ data: z.array(OAuthClientOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { items, total } = await svc().list(credential.organizationId, query);
        return paginate(items.map(toOut), query, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/oauth-clients/{client_id}',
      operationId: 'getOAuthClient',
      summary: 'Get an OAuth client (never its secret)',
      tag,
      scope: 'admin',
      params: ClientIdParams,
      response: z.object({ data: OAuthClientOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toOut(await svc().get(credential.organizationId, params.client_id)) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/oauth-clients/{client_id}/rotate-secret',
      operationId: 'rotateOAuthClientSecret',
      summary: 'Replace a confidential client’s secret; the new one is returned only in this response',
      tag,
      scope: 'admin',
      params: ClientIdParams,
      response: z.object({ data: OAuthClientWithSecretOut }),
      errors: [NOT_FOUND, [409, 'OAUTH_CLIENT_PUBLIC']],
      async handler({ params, credential }) {
        const { client, secret } = await svc().rotateSecret(credential.organizationId, params.client_id);
        return { data: { ...toOut(client), client_secret: secret } };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/oauth-clients/{client_id}',
      operationId: 'deleteOAuthClient',
      summary: 'Delete an OAuth client and revoke every token issued to it',
      tag,
      scope: 'admin',
      params: ClientIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const client = await svc().delete(credential.organizationId, params.client_id);
        return { message: `OAuth client ${client.id} deleted` };
      },
    }),
  ];
}
