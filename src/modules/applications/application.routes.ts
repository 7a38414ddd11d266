/** `/v1/applications` (admin only): the JWT applications of an organization. */
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut, paginationQuery } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { Application } from './application.entity';
import type { JwtVerifier } from './jwt-verifier';
import { ApplicationIdParams, ApplicationIn, ApplicationOut, ApplicationUpdate } from './application.schemas';
import { ApplicationService } from './application.service';

export function applicationRoutes(services: Services & { jwtVerifier: JwtVerifier }): AnyRoute[] {
  const svc = () => new ApplicationService(services.orm.em.fork(), services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS);
  const toOut = (a: Application): z.output<typeof ApplicationOut> => ({
    id: a.id,
    name: a.name,
    scopes: a.scopes,
    jwks: a.jwks as z.output<typeof ApplicationOut>['jwks'],
    jwks_uri: a.jwksUri,
    audience: services.config.JWT_AUDIENCE_EFFECTIVE,
    require_jti: a.requireJti,
    created_at: a.createdAt.toISOString(),
    updated_at: a.updatedAt.toISOString(),
  });
  const tag = 'JWT applications';
  const NOT_FOUND: [number, string] = [404, 'APPLICATION_NOT_FOUND'];
  const BAD_KEYS: [number, string] = [400, 'INVALID_JWKS | INVALID_JWKS_URI'];
  return [
    defineRoute({
      method: 'post',
      path: '/v1/applications',
      operationId: 'createApplication',
      summary: 'Register a JWT application (its id is the tokens’ iss)',
      tag,
      scope: 'admin',
      body: ApplicationIn,
      status: 201,
      response: z.object({ data: ApplicationOut }),
      errors: [BAD_KEYS, [409, 'APPLICATION_ALREADY_EXISTS']],
      async handler({ body, credential }) {
        return { data: toOut(await svc().create(credential.organizationId, body)) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/applications',
      operationId: 'listApplications',
      summary: 'List the JWT applications',
      tag,
      scope: 'admin',
      query: z.strictObject(paginationQuery),
      response: z.object({ data: z.array(ApplicationOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { items, total } = await svc().list(credential.organizationId, query);
        return paginate(items.map(toOut), query, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/applications/{application_id}',
      operationId: 'getApplication',
      summary: 'Get a JWT application',
      tag,
      scope: 'admin',
      params: ApplicationIdParams,
      response: z.object({ data: ApplicationOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toOut(await svc().get(credential.organizationId, params.application_id)) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/applications/{application_id}',
      operationId: 'updateApplication',
      summary: 'Update a JWT application: rename, change scopes, or replace its keys (rotation)',
      tag,
      scope: 'admin',
      params: ApplicationIdParams,
      body: ApplicationUpdate,
      response: z.object({ data: ApplicationOut }),
      errors: [NOT_FOUND, BAD_KEYS, [409, 'APPLICATION_ALREADY_EXISTS']],
      async handler({ params, body, credential }) {
        const app = await svc().update(credential.organizationId, params.application_id, body);
        services.jwtVerifier.forget(app.id);
        return { data: toOut(app) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/applications/{application_id}',
      operationId: 'deleteApplication',
      summary: 'Delete a JWT application; its tokens stop working within a second in every process',
      tag,
      scope: 'admin',
      params: ApplicationIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const app = await svc().delete(credential.organizationId, params.application_id);
        services.jwtVerifier.forget(app.id);
        return { message: `Application ${app.id} deleted` };
      },
    }),
  ];
}
