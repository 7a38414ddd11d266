/** `/v1/api-keys` (admin only) and `/v1/me`. */
import { PERMISSIONS, SCOPES } from '../../credentials/scopes';
import { MessageOut, Timestamp } from '../../http/openapi';
import { paginate, PaginationOut, paginationQuery } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { ApiKey } from './api-key.entity';
import type { ApiKeyVerifier } from './api-key-verifier';
import { ApiKeyService } from './api-key.service';

const ApiKeyOut = z
  .object({
    id: z.string(),
    name: z.string(),
    permission: z.enum(PERMISSIONS),
    prefix: z.string().openapi({ example: 'wfa_3xQb' }),
    last_four: z.string(),
    created_at: Timestamp,
    last_used_at: Timestamp.nullable(),
  })
  .openapi('ApiKey');

const ApiKeyCreatedOut = ApiKeyOut.extend({
  key: z.string().openapi({ description: 'The full key. Shown only in this response.' }),
}).openapi('ApiKeyCreated');

const ApiKeyIn = z
  .strictObject({ name: z.string().trim().min(1).max(200), permission: z.enum(PERMISSIONS) })
  .openapi('ApiKeyCreate');

const KeyIdParams = z.object({ key_id: z.string().max(64) });

const MeOut = z
  .object({
    credential_type: z.enum(['api_key', 'oauth', 'jwt']),
    credential_id: z.string().openapi({ description: 'API key id, OAuth grant id (one user’s consent to one client) or JWT application id' }),
    name: z.string(),
    organization_id: z.string(),
    permission: z.enum(PERMISSIONS).nullable().openapi({ description: 'The API key’s level or the OAuth user’s role; null for a JWT' }),
    scopes: z.array(z.enum(SCOPES)),
    sub: z.string().optional().openapi({ description: 'JWT `sub`, or the OAuth user id' }),
    client_id: z.string().optional().openapi({ description: 'OAuth: the client the token was issued to' }),
    user_id: z.string().optional().openapi({ description: 'OAuth: the user who consented' }),
    expires_at: z.string().optional().openapi({ description: 'OAuth and JWT: when the token expires' }),
  })
  .openapi('Me');

const toApiKeyOut = (k: ApiKey): z.output<typeof ApiKeyOut> => ({
  id: k.id,
  name: k.name,
  permission: k.permission,
  prefix: k.prefix,
  last_four: k.lastFour,
  created_at: k.createdAt.toISOString(),
  last_used_at: k.lastUsedAt?.toISOString() ?? null,
});

export function apiKeyRoutes(services: Services & { apiKeys: ApiKeyVerifier }): AnyRoute[] {
  const svc = () => new ApiKeyService(services.orm.em.fork());
  const tag = 'API keys';
  const NOT_FOUND: [number, string] = [404, 'API_KEY_NOT_FOUND'];
  return [
    defineRoute({
      method: 'get',
      path: '/v1/me',
      operationId: 'getMe',
      summary: 'Describe the credential used for this request (the identity check: any valid credential, whatever its scopes)',
      tag: 'Authentication',
      scope: null,
      response: z.object({ data: MeOut }),
      async handler({ credential: c }) {
        return {
          data: {
            credential_type: c.type,
            credential_id: c.id,
            name: c.name,
            organization_id: c.organizationId,
            permission: c.permission,
            scopes: SCOPES.filter((s) => c.scopes.has(s)),
            ...(c.subject !== undefined ? { sub: c.subject } : {}),
            ...(c.clientId !== undefined ? { client_id: c.clientId } : {}),
            ...(c.userId !== undefined ? { user_id: c.userId } : {}),
            ...(c.expiresAt !== undefined ? { expires_at: c.expiresAt.toISOString() } : {}),
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/api-keys',
      operationId: 'createApiKey',
      summary: 'Create an API key; the key is returned only in this response',
      tag,
      scope: 'admin',
      body: ApiKeyIn,
      status: 201,
      response: z.object({ data: ApiKeyCreatedOut }),
      async handler({ body, credential }) {
        const { apiKey, key } = await svc().create(credential.organizationId, body.name, body.permission);
        return { data: { ...toApiKeyOut(apiKey), key } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/api-keys',
      operationId: 'listApiKeys',
      summary: 'List the active API keys (never the keys themselves)',
      tag,
      scope: 'admin',
      query: z.strictObject(paginationQuery),
      response: z.object({ data: z.array(ApiKeyOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { items, total } = await svc().list(credential.organizationId, query);
        return paginate(items.map(toApiKeyOut), query, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/api-keys/{key_id}',
      operationId: 'getApiKey',
      summary: 'Get an API key (never the key itself)',
      tag,
      scope: 'admin',
      params: KeyIdParams,
      response: z.object({ data: ApiKeyOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toApiKeyOut(await svc().get(credential.organizationId, params.key_id)) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/api-keys/{key_id}',
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key; it stops working within a second in every process',
      tag,
      scope: 'admin',
      params: KeyIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const key = await svc().revoke(credential.organizationId, params.key_id);
        services.apiKeys.forget(key.keyHash);
        return { message: `API key ${key.id} revoked` };
      },
    }),
  ];
}
