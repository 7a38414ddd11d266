/** The webhooks endpoints of the contract: create, list, get, update, delete, test, logs, redeliver. */
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Config } from '../../config';
import { openSecret, sealedAt } from '../../secrets';
import type { Services } from '../../services';
import type { Webhook, WebhookLog } from './webhook.entity';
import {
  classifyWebhookIssue,
  EventCatalogOut,
  RecoverIn,
  RecoveryOut,
  RedeliveryOut,
  RotateSecretIn,
  RotateSecretOut,
  WebhookCreatedOut,
  WebhookIdParams,
  WebhookIn,
  WebhookListItemOut,
  WebhookListQuery,
  WebhookLogOut,
  WebhookLogParams,
  WebhookLogQuery,
  WebhookOut,
  WebhookRecoveryParams,
  WebhookTestIn,
  WebhookTestOut,
  WebhookUpdate,
} from './webhook.schemas';
import { eventCatalog } from './webhook.events-doc';
import { WebhookSender } from './webhook.sender';
import { WebhookService } from './webhook.service';
import { WebhookRecoveryService } from './webhook-recovery.service';

export function toWebhookListItem(h: Webhook): z.output<typeof WebhookListItemOut> {
  return {
    id: h.id,
    name: h.name,
    url: h.url,
    events: h.events,
    active: h.active,
    disabled_reason: h.disabledReason,
    disabled_at: h.disabledAt?.toISOString() ?? null,
    rate_limit: h.rateLimit,
    created_at: h.createdAt.toISOString(),
    updated_at: h.updatedAt.toISOString(),
  };
}

/** The secret is stored sealed (src/secrets.ts): opened only for the answers that show it. */
const toCreatedOut = (h: Webhook, config: Config): z.output<typeof WebhookCreatedOut> => ({ ...toWebhookListItem(h), secret: openSecret(config, h.secret, sealedAt.webhookSecret(h.id)) });
const toWebhookOut = (h: Webhook, config: Config): z.output<typeof WebhookOut> => ({
  ...toCreatedOut(h, config),
  retry_policy: { max_retries: h.maxRetries, retry_delay_ms: h.retryDelayMs },
});

export const toWebhookLogOut = (l: Omit<WebhookLog, 'responseBody'>): z.output<typeof WebhookLogOut> => ({
  id: l.id,
  webhook_id: l.webhookId,
  event_id: l.eventId,
  event_type: l.eventType,
  status: l.status,
  response_code: l.responseCode,
  response_time_ms: l.responseTimeMs,
  attempt: l.attempt,
  delivered_at: l.deliveredAt.toISOString(),
  error_message: l.errorMessage,
});

const NOT_FOUND: [number, string] = [404, 'WEBHOOK_NOT_FOUND'];

export function webhookRoutes(services: Services): AnyRoute[] {
  let sender: WebhookSender | undefined;
  const getSender = () => (sender ??= WebhookSender.fromConfig(services.config));
  const svc = () => new WebhookService(services.orm.em.fork(), services, getSender);
  const recoveries = new WebhookRecoveryService(services);
  const tag = 'Webhooks';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/webhooks',
      operationId: 'createWebhook',
      summary: 'Create a webhook (the answer carries the secret; retry_policy is read with get)',
      tag,
      scope: 'webhooks:write',
      limits: ['resource_write'],
      body: WebhookIn,
      classify: classifyWebhookIssue,
      status: 201,
      response: z.object({ data: WebhookCreatedOut }),
      errors: [
        [400, 'INVALID_WEBHOOK_URL | INVALID_EVENT_TYPES | INVALID_RETRY_POLICY'],
        [409, 'WEBHOOK_ALREADY_EXISTS'],
      ],
      async handler({ body, credential }) {
        return { data: toCreatedOut(await svc().create(credential.organizationId, body), services.config) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks',
      operationId: 'listWebhooks',
      summary: 'List webhooks (items carry neither secret nor retry_policy)',
      tag,
      scope: 'webhooks:read',
      limits: ['resource_read'],
      query: WebhookListQuery,
      classify: classifyWebhookIssue,
      response: z.object({ data: z.array(WebhookListItemOut), pagination: PaginationOut }),
      errors: [[400, 'INVALID_EVENT_TYPES']],
      async handler({ query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc().list(credential.organizationId, filter, { page, limit });
        return paginate(items.map(toWebhookListItem), { page, limit }, total);
      },
    }),
    // Before /v1/webhooks/{webhook_id}: the first matching route answers.
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/event-types',
      operationId: 'listWebhookEventTypes',
      summary: 'The event catalog: every event type, its description and the JSON Schema of its data',
      description: 'Generated from the schemas of the OpenAPI `webhooks` entries. Not paginated.',
      tag,
      scope: 'webhooks:read',
      limits: ['resource_read'],
      response: z.object({ data: z.array(EventCatalogOut) }),
      async handler() {
        return { data: eventCatalog() };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/{webhook_id}',
      operationId: 'getWebhook',
      summary: 'Get a webhook with its secret and retry_policy',
      tag,
      scope: 'webhooks:read',
      limits: ['resource_read'],
      params: WebhookIdParams,
      response: z.object({ data: WebhookOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toWebhookOut(await svc().get(credential.organizationId, params.webhook_id), services.config) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/webhooks/{webhook_id}',
      operationId: 'updateWebhook',
      summary: 'Update a webhook: any of name, events, retry_policy (and active)',
      tag,
      scope: 'webhooks:write',
      limits: ['resource_write'],
      params: WebhookIdParams,
      body: WebhookUpdate,
      classify: classifyWebhookIssue,
      response: z.object({ data: WebhookOut }),
      errors: [NOT_FOUND, [400, 'INVALID_EVENT_TYPES | INVALID_RETRY_POLICY']],
      async handler({ params, body, credential }) {
        return { data: toWebhookOut(await svc().update(credential.organizationId, params.webhook_id, body), services.config) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/webhooks/{webhook_id}',
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook and its log; deliveries in flight stop',
      tag,
      scope: 'webhooks:delete',
      limits: ['resource_delete'],
      params: WebhookIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        await svc().delete(credential.organizationId, params.webhook_id);
        return { message: `Webhook ${params.webhook_id} deleted` };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/{webhook_id}/rotate-secret',
      operationId: 'rotateWebhookSecret',
      summary: 'Replace the signing secret; the previous one keeps signing beside it for the overlap',
      description:
        'Answers the new secret. For WEBHOOK_SECRET_OVERLAP_HOURS (default 24) every delivery carries two `v1,` signatures in ' +
        '`webhook-signature` (new, then previous), `X-Service-Signature` of the new secret and `X-Service-Signature-Previous` of ' +
        'the previous one; after it only the new secret signs. A rotation during an overlap ends that overlap: only the secret ' +
        'being replaced stays valid.',
      tag,
      scope: 'webhooks:write',
      limits: ['resource_write'],
      params: WebhookIdParams,
      body: RotateSecretIn,
      classify: classifyWebhookIssue,
      response: z.object({ data: RotateSecretOut }),
      errors: [NOT_FOUND],
      async handler({ params, body, credential }) {
        const hook = await svc().rotateSecret(credential.organizationId, params.webhook_id, body.secret);
        return {
          data: { webhook_id: hook.id, secret: openSecret(services.config, hook.secret, sealedAt.webhookSecret(hook.id)), previous_secret_expires_at: hook.previousSecretExpiresAt?.toISOString() ?? null },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/{webhook_id}/test',
      operationId: 'testWebhook',
      summary: 'Send one real signed delivery of a test event and report the outcome',
      description: 'One attempt, no retries, not written to the delivery log. `status` is `success` for a 2xx answer.',
      tag,
      scope: 'webhooks:write',
      limits: ['resource_write'],
      params: WebhookIdParams,
      body: WebhookTestIn,
      classify: classifyWebhookIssue,
      response: z.object({ data: WebhookTestOut }),
      errors: [NOT_FOUND, [400, 'INVALID_EVENT_TYPES']],
      async handler({ params, body, credential }) {
        return { data: await svc().test(credential.organizationId, params.webhook_id, body) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/{webhook_id}/logs',
      operationId: 'listWebhookLogs',
      summary: 'List delivery attempts, newest first',
      tag,
      scope: 'webhooks:read',
      limits: ['resource_read'],
      params: WebhookIdParams,
      query: WebhookLogQuery,
      response: z.object({ data: z.array(WebhookLogOut), pagination: PaginationOut }),
      errors: [NOT_FOUND, [400, 'INVALID_DATE_RANGE']],
      async handler({ params, query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc().logs(credential.organizationId, params.webhook_id, filter, { page, limit });
        return paginate(items.map(toWebhookLogOut), { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/{webhook_id}/logs/{log_id}/redeliver',
      operationId: 'redeliverWebhookLog',
      summary: "Deliver a log entry's event again (same event id; attempts continue the count)",
      tag,
      scope: 'webhooks:write',
      limits: ['resource_write'],
      params: WebhookLogParams,
      response: z.object({ data: RedeliveryOut }),
      errors: [
        [404, 'WEBHOOK_NOT_FOUND | WEBHOOK_LOG_NOT_FOUND'],
        [422, 'WEBHOOK_VALIDATION_FAILED'],
      ],
      async handler({ params, credential, claim }) {
        return { data: await svc().redeliver(credential.organizationId, params.webhook_id, params.log_id, claim ? { claim } : {}) };
      },
      // The first try recorded its delivery's id and died before its answer was stored: the same id is started (once).
      async resume({ params, credential, point }) {
        return { data: await svc().redeliver(credential.organizationId, params.webhook_id, params.log_id, { deliveryId: point.delivery_id ?? '' }) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhooks/{webhook_id}/recover',
      operationId: 'recoverWebhook',
      summary: "Redeliver the webhook's events of a window (all, or those whose last attempt failed), as one rate-limited Temporal workflow",
      description:
        'Answers at once with the recovery; GET its id for progress. Each event is delivered once: an event another recovery is ' +
        'delivering or has delivered is skipped. Deliveries start at most WEBHOOK_RECOVERY_RATE_PER_SECOND a second, and the ' +
        "webhook's rate_limit applies to them.",
      tag,
      scope: 'webhooks:write',
      limits: ['resource_write'],
      params: WebhookIdParams,
      body: RecoverIn,
      status: 202,
      response: z.object({ data: RecoveryOut }),
      errors: [NOT_FOUND, [400, 'INVALID_DATE_RANGE'], [422, 'WEBHOOK_VALIDATION_FAILED']],
      async handler({ params, body, credential }) {
        return { data: await recoveries.create(credential.organizationId, params.webhook_id, body) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhooks/{webhook_id}/recoveries/{recovery_id}',
      operationId: 'getWebhookRecovery',
      summary: "A recovery's progress: its window, status and counts",
      tag,
      scope: 'webhooks:read',
      limits: ['resource_read'],
      params: WebhookRecoveryParams,
      response: z.object({ data: RecoveryOut }),
      errors: [[404, 'WEBHOOK_NOT_FOUND | WEBHOOK_RECOVERY_NOT_FOUND']],
      async handler({ params, credential }) {
        return { data: await recoveries.get(credential.organizationId, params.webhook_id, params.recovery_id) };
      },
    }),
  ];
}
