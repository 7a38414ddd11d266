/**
 * Owns the inbound side of webhook triggers: `{BASE_URL}/hooks/triggers/{trigger_id}`,
 * outside /v1 and its API-key pipeline. A request is accepted when it uses the trigger's
 * method, carries `X-Service-Signature` = lowercase hex HMAC-SHA256 of the raw body keyed
 * with the trigger's secret (compared in constant time) and every configured header with
 * its configured value, and fits in 100 verified requests per minute per trigger. Its
 * JSON body (or, without a body, its query parameters) becomes the execution input.
 * Unverified requests are not counted, so they cannot use up a sender's budget.
 */
import Router from '@koa/router';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context } from 'koa';
import { AppError } from '../../http/errors';
import { ErrorOut, type OpenAPIRegistry } from '../../http/openapi';
import { z } from '../../http/zod';
import { rateLimitExceeded, rateLimitHeaders } from '../../http/rate-limit';
import { constantTimeEqual, SIGNATURE_HEADER, signBody } from '../../http/signature';
import type { Services } from '../../services';
import { fireTrigger } from './trigger-firing';
import { Trigger } from './trigger.entity';
import { toExecutionOut } from './trigger.routes';
import { TriggerExecutionOut, type WebhookTriggerConfig } from './trigger.schemas';
import { TriggerService, triggerNotFound } from './trigger.service';

const unauthorized = (code: string, message: string) => new AppError(401, code, message);

export function triggerReceiverRouter(services: Services): Router {
  const router = new Router();
  router.all('/hooks/triggers/:trigger_id', (ctx) => receive(ctx, services));
  return router;
}

async function receive(ctx: Context, services: Services): Promise<void> {
  const id = String(ctx.params.trigger_id ?? '');
  if (!/^trg_[A-Za-z0-9]{1,60}$/.test(id)) throw triggerNotFound();
  const em = services.orm.em.fork() as EntityManager;
  const trigger = await em.findOne(Trigger, { id, type: 'webhook', deletedAt: null });
  if (!trigger) throw triggerNotFound();
  const config = trigger.configuration as unknown as WebhookTriggerConfig & { secret: string };

  if (ctx.method !== config.method) {
    throw new AppError(405, 'METHOD_NOT_ALLOWED', `This trigger accepts ${config.method} requests only`, { headers: { Allow: config.method } });
  }

  const body = ctx.request.body as unknown;
  // koa-body 8 with includeUnparsed keeps the exact bytes received at `ctx.request.rawBody`.
  const rawBody = (ctx.request as { rawBody?: unknown }).rawBody;
  const raw = typeof rawBody === 'string' ? rawBody : '';
  const signature = ctx.get(SIGNATURE_HEADER).trim().toLowerCase();
  if (!signature) throw unauthorized('INVALID_SIGNATURE', 'X-Service-Signature header is required');
  if (!constantTimeEqual(signature, signBody(config.secret, raw))) {
    throw unauthorized('INVALID_SIGNATURE', 'X-Service-Signature does not match the body signed with the trigger secret');
  }
  for (const [name, expected] of Object.entries(config.headers ?? {})) {
    if (!constantTimeEqual(ctx.get(name), expected)) throw unauthorized('INVALID_HEADER', `Header ${name} is missing or does not have the configured value`);
  }

  const limit = await services.rateLimiter.check([{ rule: services.limits.inbound_webhook, subject: trigger.id }]);
  ctx.set(rateLimitHeaders(limit));
  if (!limit.allowed) throw rateLimitExceeded(limit);

  let input: Record<string, unknown>;
  if (raw === '') input = { ...ctx.query };
  else if (body && typeof body === 'object' && !Array.isArray(body)) input = Object.fromEntries(Object.entries(body as Record<string, unknown>));
  else throw new AppError(400, 'INVALID_REQUEST', 'The webhook body must be a JSON object');

  const fired = await fireTrigger(services, {
    organizationId: trigger.organizationId,
    triggerId: trigger.id,
    workflowId: trigger.workflowId,
    channel: trigger.channel,
    input,
    metadata: { source: 'webhook', user_agent: ctx.get('user-agent') || null, request_id: ctx.state.requestId ?? null },
  });
  const row = await new TriggerService(em, services).getExecution(trigger.organizationId, trigger.id, fired.triggerExecutionId);
  ctx.status = 202;
  ctx.body = { data: toExecutionOut(row) };
}

/** The receiver in the OpenAPI document: it lives outside /v1 and authenticates by signature. */
export function registerTriggerReceiverDocs(registry: OpenAPIRegistry): void {
  const error = (description: string) => ({ description, content: { 'application/json': { schema: ErrorOut } } });
  registry.registerPath({
    method: 'post',
    path: '/hooks/triggers/{trigger_id}',
    operationId: 'receiveWebhookTrigger',
    summary: "Fire a webhook trigger (the trigger's `url`; the method is the trigger's `method`)",
    description:
      'Signed with `X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw body keyed with the trigger secret. ' +
      'Every configured header must carry its configured value. The JSON body becomes the execution input. 100 verified requests per minute per trigger.',
    tags: ['Triggers'],
    security: [],
    request: {
      params: z.object({ trigger_id: z.string() }),
      headers: z.object({ 'X-Service-Signature': z.string().openapi({ example: 'a3f1…' }) }),
      body: { content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } },
    },
    responses: {
      202: { description: 'Accepted: the trigger execution', content: { 'application/json': { schema: z.object({ data: TriggerExecutionOut }) } } },
      400: error('INVALID_REQUEST: the body is not a JSON object'),
      401: error('INVALID_SIGNATURE | INVALID_HEADER'),
      404: error('TRIGGER_NOT_FOUND'),
      405: error('METHOD_NOT_ALLOWED'),
      409: error('TRIGGER_NOT_ACTIVE | WORKFLOW_NOT_ACTIVE'),
      415: error('UNSUPPORTED_MEDIA_TYPE'),
      429: error('RATE_LIMIT_EXCEEDED'),
    },
  });
}
