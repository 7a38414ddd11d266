/** The bulk replay endpoints: create, list, get, cancel. */
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { ReplayDetailOut, ReplayIn, ReplayListQuery, ReplayOut, ReplayParams } from './replay.schemas';
import { ReplayService } from './replay.service';

const REPLAY_NOT_FOUND: [number, string] = [404, 'REPLAY_NOT_FOUND'];

export function replayRoutes(services: Services): AnyRoute[] {
  const svc = new ReplayService(services);
  const tag = 'Replays';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/replays',
      operationId: 'createReplay',
      summary: 'Retry every failed or cancelled execution a filter matches, as one rate-limited Temporal batch',
      tag,
      scope: 'workflows:write',
      limits: ['execution_ops'],
      body: ReplayIn,
      status: 201,
      response: z.object({ data: ReplayDetailOut }),
      errors: [[404, 'WORKFLOW_NOT_FOUND | TRIGGER_NOT_FOUND | EXECUTION_NOT_FOUND'], [400, 'INVALID_DATE_RANGE']],
      async handler({ body, credential, claim }) {
        return { data: await svc.create(credential.organizationId, body, claim) };
      },
      // The first try committed the replay (its batch started by the reconciler if that try did not) and died before its answer was stored.
      async resume({ credential, point }) {
        return { data: await svc.detail(credential.organizationId, point.replay_id ?? '') };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/replays',
      operationId: 'listReplays',
      summary: "List the organization's replays, newest first",
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      query: ReplayListQuery,
      response: z.object({ data: z.array(ReplayOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc.list(credential.organizationId, filter, { page, limit });
        return paginate(items, { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/replays/{replay_id}',
      operationId: 'getReplay',
      summary: 'Get a replay: status, counters and the reasons of refused retries',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: ReplayParams,
      response: z.object({ data: ReplayDetailOut }),
      errors: [REPLAY_NOT_FOUND],
      async handler({ params, credential }) {
        return { data: await svc.detail(credential.organizationId, params.replay_id) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/replays/{replay_id}/cancel',
      operationId: 'cancelReplay',
      summary: 'Stop a running replay; retries already started keep running',
      tag,
      scope: 'workflows:write',
      limits: ['execution_ops'],
      params: ReplayParams,
      response: z.object({ data: ReplayDetailOut }),
      errors: [REPLAY_NOT_FOUND, [409, 'REPLAY_NOT_RUNNING']],
      async handler({ params, credential }) {
        return { data: await svc.cancel(credential.organizationId, params.replay_id) };
      },
    }),
  ];
}
