/** `/v1/channels` (admin to write, read keys to read): an organization's channel connections. */
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { ChannelConnection } from './channel.entity';
import {
  ChannelConnectionIn,
  ChannelConnectionOut,
  ChannelConnectionUpdate,
  ChannelConnectionWithTokenOut,
  ChannelIdParams,
  ChannelListQuery,
  ChannelTestOut,
} from './channel.schemas';
import { ChannelService } from './channel.service';
import { type ChannelConnectionType, providerOf } from './providers';

export function channelRoutes(services: Services): AnyRoute[] {
  const svc = () => new ChannelService(services.orm.em.fork(), services.config);
  const toOut = (c: ChannelConnection): z.output<typeof ChannelConnectionOut> => ({
    id: c.id,
    type: c.type as ChannelConnectionType,
    channel: c.channel as z.output<typeof ChannelConnectionOut>['channel'],
    name: c.name,
    status: c.status,
    config: { ...c.config },
    webhook_url: providerOf(c.type).webhookUrl?.(services.config, c.id) ?? null,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  });
  const tag = 'Channels';
  const NOT_FOUND: [number, string] = [404, 'CHANNEL_NOT_FOUND'];
  return [
    defineRoute({
      method: 'post',
      path: '/v1/channels',
      operationId: 'createChannel',
      summary: 'Connect a channel (WhatsApp Cloud API, Instagram Messaging or an HTTP provider); the answer carries the verify token, once',
      tag,
      scope: 'admin',
      limits: ['resource_write'],
      body: ChannelConnectionIn,
      status: 201,
      response: z.object({ data: ChannelConnectionWithTokenOut }),
      errors: [[409, 'CHANNEL_ALREADY_EXISTS']],
      async handler({ body, credential }) {
        const { connection, verifyToken } = await svc().create(credential.organizationId, body);
        return { data: { ...toOut(connection), verify_token: verifyToken } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/channels',
      operationId: 'listChannels',
      summary: 'List channel connections (never their secrets)',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      query: ChannelListQuery,
      response: z.object({ data: z.array(ChannelConnectionOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc().list(credential.organizationId, filter, { page, limit });
        return paginate(items.map(toOut), { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/channels/{channel_id}',
      operationId: 'getChannel',
      summary: 'Get a channel connection (never its secrets)',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: ChannelIdParams,
      response: z.object({ data: ChannelConnectionOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toOut(await svc().get(credential.organizationId, params.channel_id)) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/channels/{channel_id}',
      operationId: 'updateChannel',
      summary: 'Update a channel connection: name, status, any config field (a secret is replaced only when sent)',
      tag,
      scope: 'admin',
      limits: ['resource_write'],
      params: ChannelIdParams,
      body: ChannelConnectionUpdate,
      response: z.object({ data: ChannelConnectionOut }),
      errors: [NOT_FOUND, [409, 'CHANNEL_ALREADY_EXISTS']],
      async handler({ params, body, credential }) {
        return { data: toOut(await svc().update(credential.organizationId, params.channel_id, body)) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/channels/{channel_id}',
      operationId: 'deleteChannel',
      summary: 'Delete a channel connection (its hook answers 404 from now on)',
      tag,
      scope: 'admin',
      limits: ['resource_delete'],
      params: ChannelIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        await svc().remove(credential.organizationId, params.channel_id);
        return { message: `Channel connection ${params.channel_id} deleted` };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/channels/{channel_id}/rotate-verify-token',
      operationId: 'rotateChannelVerifyToken',
      summary: "Replace the verify token of Meta's webhook handshake; the answer carries the new one, once",
      tag,
      scope: 'admin',
      limits: ['resource_write'],
      params: ChannelIdParams,
      response: z.object({ data: ChannelConnectionWithTokenOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const { connection, verifyToken } = await svc().rotateVerifyToken(credential.organizationId, params.channel_id);
        return { data: { ...toOut(connection), verify_token: verifyToken } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/channels/{channel_id}/test',
      operationId: 'testChannel',
      summary: 'Call the provider with the stored credentials (Meta: GET the phone number or Instagram account) and set status from the answer',
      tag,
      scope: 'admin',
      limits: ['resource_write'],
      params: ChannelIdParams,
      response: z.object({ data: ChannelTestOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: await svc().test(credential.organizationId, params.channel_id) };
      },
    }),
  ];
}
