/** `/v1/users` (admin only): the people who sign in to consent to OAuth clients. */
import { notFound } from '../../errors';
import { PERMISSIONS, SCOPES } from '../../credentials/scopes';
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut, paginationQuery } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { UserGrant, UserServices } from './user-grants';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './password';
import type { User } from './user.entity';
import { UserService } from './user.service';

const Password = z.string().min(PASSWORD_MIN_LENGTH).max(PASSWORD_MAX_LENGTH).openapi({ description: `${PASSWORD_MIN_LENGTH}–${PASSWORD_MAX_LENGTH} characters; stored only as a scrypt hash` });
const Role = z.enum(PERMISSIONS).openapi({ description: 'Maps onto scopes like an API key permission: read, read_write (no delete), admin' });

const UserIn = z.strictObject({ email: z.email().max(320), password: Password, role: Role }).openapi('UserCreate');
const UserUpdate = z.strictObject({ role: Role.optional(), password: Password.optional() }).openapi('UserUpdate');
const UserOut = z
  .object({ id: z.string(), email: z.string(), role: Role, created_at: z.string(), updated_at: z.string() })
  .openapi('User');
const UserIdParams = z.object({ user_id: z.string().max(64) });
const UserGrantParams = z.object({ user_id: z.string().max(64), client_id: z.string().max(64) });

const GrantOut = z
  .object({
    client_id: z.string(),
    client_name: z.string(),
    scopes: z.array(z.enum(SCOPES)).openapi({ description: 'What the user approved (their tokens are further cut to their current role)' }),
    granted_at: z.string(),
    expires_at: z.string().nullable(),
  })
  .openapi('OAuthGrant', { description: 'One user’s consent to one OAuth client' });

const toGrantOut = (g: UserGrant): z.output<typeof GrantOut> => ({
  client_id: g.clientId,
  client_name: g.clientName,
  scopes: g.scopes,
  granted_at: g.grantedAt.toISOString(),
  expires_at: g.expiresAt?.toISOString() ?? null,
});

const toOut = (u: User): z.output<typeof UserOut> => ({
  id: u.id,
  email: u.email,
  role: u.role,
  created_at: u.createdAt.toISOString(),
  updated_at: u.updatedAt.toISOString(),
});

export function userRoutes(services: Services & UserServices): AnyRoute[] {
  const svc = () => new UserService(services.orm.em.fork());
  const tag = 'Users';
  const NOT_FOUND: [number, string] = [404, 'USER_NOT_FOUND'];
  return [
    defineRoute({
      method: 'post',
      path: '/v1/users',
      operationId: 'createUser',
      summary: 'Create a user who can sign in and consent to OAuth clients',
      tag,
      scope: 'admin',
      body: UserIn,
      status: 201,
      response: z.object({ data: UserOut }),
      errors: [[409, 'USER_ALREADY_EXISTS']],
      async handler({ body, credential }) {
        return { data: toOut(await svc().create(credential.organizationId, body)) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/users',
      operationId: 'listUsers',
      summary: 'List users',
      tag,
      scope: 'admin',
      query: z.strictObject(paginationQuery),
      response: z.object({ data: z.array(UserOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { items, total } = await svc().list(credential.organizationId, query);
        return paginate(items.map(toOut), query, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/users/{user_id}',
      operationId: 'getUser',
      summary: 'Get a user',
      tag,
      scope: 'admin',
      params: UserIdParams,
      response: z.object({ data: UserOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toOut(await svc().get(credential.organizationId, params.user_id)) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/users/{user_id}',
      operationId: 'updateUser',
      summary: 'Change a user’s role or password; their OAuth tokens narrow to the new role at once',
      tag,
      scope: 'admin',
      params: UserIdParams,
      body: UserUpdate,
      response: z.object({ data: UserOut }),
      errors: [NOT_FOUND],
      async handler({ params, body, credential }) {
        return { data: toOut(await svc().update(credential.organizationId, params.user_id, body)) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/users/{user_id}',
      operationId: 'deleteUser',
      summary: 'Delete a user and revoke their OAuth grants and tokens',
      tag,
      scope: 'admin',
      params: UserIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const user = await svc().delete(credential.organizationId, params.user_id);
        await services.oauthGrants.forgetUser(user.id);
        return { message: `User ${user.id} deleted` };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/users/{user_id}/grants',
      operationId: 'listUserGrants',
      summary: 'List the OAuth clients a user has approved, one per client',
      tag,
      scope: 'admin',
      params: UserIdParams,
      response: z.object({ data: z.array(GrantOut) }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const user = await svc().get(credential.organizationId, params.user_id);
        return { data: (await services.oauthGrants.list(user.id)).map(toGrantOut) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/users/{user_id}/grants',
      operationId: 'revokeUserGrants',
      summary: 'Revoke every OAuth grant of a user: their clients’ access and refresh tokens stop working within a second',
      tag,
      scope: 'admin',
      params: UserIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const user = await svc().get(credential.organizationId, params.user_id);
        const revoked = await services.oauthGrants.revoke(user.id);
        services.logger.info({ user_id: user.id, grants: revoked }, 'oauth grants revoked by an admin');
        return { message: `Revoked ${revoked} grant(s) of user ${user.id}` };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/users/{user_id}/grants/{client_id}',
      operationId: 'revokeUserGrant',
      summary: 'Revoke a user’s grant to one OAuth client: its access and refresh tokens stop working within a second',
      tag,
      scope: 'admin',
      params: UserGrantParams,
      response: MessageOut,
      errors: [[404, 'USER_NOT_FOUND | GRANT_NOT_FOUND']],
      async handler({ params, credential }) {
        const user = await svc().get(credential.organizationId, params.user_id);
        if ((await services.oauthGrants.revoke(user.id, params.client_id)) === 0) throw notFound('GRANT_NOT_FOUND', 'Grant');
        services.logger.info({ user_id: user.id, client_id: params.client_id }, 'oauth grant revoked by an admin');
        return { message: `Revoked the grant of user ${user.id} to client ${params.client_id}` };
      },
    }),
  ];
}
