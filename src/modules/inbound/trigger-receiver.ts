/**
 * Owns the inbound side of webhook triggers: `{BASE_URL}/hooks/triggers/{trigger_id}`,
 * outside /v1 and its API-key pipeline. A request is accepted when it uses the trigger's
 * method, is signed with the trigger's secret, carries every configured header with its
 * configured value, and fits in 100 verified requests per minute per trigger.
 *
 * What is signed is what becomes the execution input: the raw query string for GET
 * triggers (GET has no body), the raw body for every other method (whose query string is
 * then ignored, never input). Two schemes (src/http/signature.ts):
 * - `X-Service-Signature`: hex HMAC of that payload; no replay protection;
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`): the
 *   timestamp must be within 5 minutes of now and an accepted `webhook-id` is remembered
 *   in Redis for 10 minutes, so a captured request cannot be replayed.
 * Unverified requests are not counted, so they cannot use up a sender's budget.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../../http/errors';
import { ErrorOut, type OpenAPIRegistry, RATE_LIMIT_HEADERS, responseHeaders } from '../../http/openapi';
import { z } from '../../http/zod';
import { rateLimitExceeded, rateLimitHeaders } from '../../http/rate-limit';
import {
  constantTimeEqual,
  SIGNATURE_HEADER,
  signBody,
  STANDARD_WEBHOOK_TOLERANCE_SECONDS,
  verifyStandardWebhookSignature,
} from '../../http/signature';
import { openSecret, sealedAt } from '../../secrets';
import type { Services } from '../../services';
import { fireTrigger } from '../triggers/trigger-firing';
import { resolveCustomerRef } from '../customers/customer-ref';
import type { Trigger } from '../triggers/trigger.entity';
import { toTriggerExecutionOut } from '../triggers/trigger.out';
import { TriggerExecutionOut, type WebhookTriggerConfig } from '../triggers/trigger.schemas';
import { TriggerService, triggerNotFound } from '../triggers/trigger.service';

const unauthorized = (code: string, message: string) => new AppError(401, code, message);

export function triggerReceiverRouter(services: Services): Router {
  const router = new Router();
  router.all('/hooks/triggers/:trigger_id', (ctx) => receive(ctx, services));
  return router;
}

async function receive(ctx: Context, services: Services): Promise<void> {
  const id = String(ctx.params.trigger_id ?? '');
  if (!/^trg_[A-Za-z0-9]{1,60}$/.test(id)) throw triggerNotFound();
  const triggers = new TriggerService(services.orm.em.fork(), services);
  const trigger = await triggers.getWebhookTrigger(id);
  const config = trigger.configuration as unknown as WebhookTriggerConfig & { secret: string };

  if (ctx.method !== config.method) {
    throw new AppError(405, 'METHOD_NOT_ALLOWED', `This trigger accepts ${config.method} requests only`, { headers: { Allow: config.method } });
  }

  // koa-body 8 with includeUnparsed keeps the exact bytes received at `ctx.request.rawBody`.
  const rawBody = (ctx.request as { rawBody?: unknown }).rawBody;
  const takesQuery = config.method === 'GET';
  const payload = takesQuery ? ctx.querystring : typeof rawBody === 'string' ? rawBody : '';
  const replayId = verifySignature(ctx, openSecret(services.config, config.secret, sealedAt.triggerSecret(trigger.id)), payload);
  for (const [name, expected] of Object.entries(config.headers ?? {})) {
    if (!constantTimeEqual(ctx.get(name), expected)) throw unauthorized('INVALID_HEADER', `Header ${name} is missing or does not have the configured value`);
  }

  const limit = await services.rateLimiter.check([{ rule: services.limits.inbound_webhook, subject: trigger.id }]);
  ctx.set(rateLimitHeaders(limit));
  if (!limit.allowed) throw rateLimitExceeded(limit);

  const body = ctx.request.body as unknown;
  let input: Record<string, unknown>;
  if (takesQuery) input = { ...ctx.query };
  else if (payload === '') input = {};
  else if (body && typeof body === 'object' && !Array.isArray(body)) input = Object.fromEntries(Object.entries(body as Record<string, unknown>));
  else throw new AppError(400, 'INVALID_REQUEST', 'The webhook body must be a JSON object');

  const replayKey = replayId === undefined ? undefined : `${services.config.REDIS_KEY_PREFIX}hook-id:${trigger.id}:${replayId}`;
  if (replayKey) await claimWebhookId(services, replayKey);
  try {
    await fire(ctx, services, triggers, trigger, input);
  } catch (err) {
    // Only an accepted request uses up its id: the sender may retry a refused one.
    if (replayKey) await services.redis.del(replayKey).catch(() => undefined);
    throw err;
  }
}

/**
 * Verifies whichever scheme the request uses; returns the `webhook-id` to remember when it
 * is the Standard Webhooks one (whose headers win when both are present).
 */
function verifySignature(ctx: Context, secret: string, payload: string): string | undefined {
  const standard = ctx.get('webhook-signature');
  if (standard) {
    const id = ctx.get('webhook-id');
    const timestamp = ctx.get('webhook-timestamp');
    if (!/^[\x21-\x7e]{1,255}$/.test(id)) throw unauthorized('INVALID_SIGNATURE', 'webhook-id header is required (1-255 visible ASCII characters)');
    if (!/^\d{1,12}$/.test(timestamp)) throw unauthorized('INVALID_SIGNATURE', 'webhook-timestamp header must be Unix seconds');
    if (Math.abs(Date.now() / 1000 - Number(timestamp)) > STANDARD_WEBHOOK_TOLERANCE_SECONDS) {
      throw unauthorized('INVALID_SIGNATURE', `webhook-timestamp is more than ${STANDARD_WEBHOOK_TOLERANCE_SECONDS} seconds from now`);
    }
    if (!verifyStandardWebhookSignature(secret, standard, id, Number(timestamp), payload)) {
      throw unauthorized('INVALID_SIGNATURE', 'webhook-signature does not match the signed payload');
    }
    return id;
  }
  const signature = ctx.get(SIGNATURE_HEADER).trim().toLowerCase();
  if (!signature) throw unauthorized('INVALID_SIGNATURE', 'X-Service-Signature (or the Standard Webhooks headers) is required');
  if (!constantTimeEqual(signature, signBody(secret, payload))) {
    throw unauthorized('INVALID_SIGNATURE', 'X-Service-Signature does not match the signed payload');
  }
  return undefined;
}

/** Remembers an id for twice the tolerance (a timestamp is valid 5 minutes either side). */
async function claimWebhookId(services: Services, key: string): Promise<void> {
  let claimed: string | null;
  try {
    claimed = await services.redis.set(key, '1', 'PX', 2 * STANDARD_WEBHOOK_TOLERANCE_SECONDS * 1000, 'NX');
  } catch {
    // Without Redis a replay cannot be ruled out: refuse, and let the sender retry.
    throw new AppError(503, 'SERVICE_UNAVAILABLE', 'Replay protection is unavailable; retry later', { headers: { 'Retry-After': '5' } });
  }
  if (claimed === null) throw new AppError(409, 'WEBHOOK_REPLAYED', 'This webhook-id was already accepted');
}

async function fire(ctx: Context, services: Services, triggers: TriggerService, trigger: Trigger, input: Record<string, unknown>): Promise<void> {
  // An input naming a customer (`customer_id`) gives the execution that customer, and its workflow's per-customer concurrency rule.
  const customerId = await resolveCustomerRef(services.orm.em.fork(), trigger.organizationId, trigger.channel, input.customer_id);
  const fired = await fireTrigger(services, {
    organizationId: trigger.organizationId,
    triggerId: trigger.id,
    workflowId: trigger.workflowId,
    channel: trigger.channel,
    input,
    ...(customerId ? { customerId } : {}),
    metadata: { source: 'webhook', user_agent: ctx.get('user-agent') || null, request_id: ctx.state.requestId ?? null },
  });
  const row = await triggers.getExecution(trigger.organizationId, trigger.id, fired.triggerExecutionId);
  ctx.status = 202;
  ctx.body = { data: toTriggerExecutionOut(row) };
}

/** The receiver in the OpenAPI document: it lives outside /v1 and authenticates by signature. */
export function registerTriggerReceiverDocs(registry: OpenAPIRegistry): void {
  // Limit headers only after the signature is verified (unverified calls are not counted).
  const counted = responseHeaders(RATE_LIMIT_HEADERS);
  const error = (description: string, headers = responseHeaders([])) => ({ description, headers, content: { 'application/json': { schema: ErrorOut } } });
  registry.registerPath({
    method: 'post',
    path: '/hooks/triggers/{trigger_id}',
    operationId: 'receiveWebhookTrigger',
    summary: "Fire a webhook trigger (the trigger's `url`; the method is the trigger's `method`)",
    description:
      'The signed payload is the raw body, or the raw query string for a GET trigger; it alone becomes the execution input ' +
      '(the query string of other methods is ignored). Sign it either with `X-Service-Signature` (lowercase hex HMAC-SHA256 keyed with ' +
      'the trigger secret) or the Standard Webhooks way: `webhook-id`, `webhook-timestamp` (Unix seconds, within 5 minutes) and ' +
      '`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.payload">`; an accepted `webhook-id` is refused for 10 minutes (409). ' +
      'Every configured header must carry its configured value. 100 verified requests per minute per trigger.',
    tags: ['Triggers'],
    security: [],
    request: {
      params: z.object({ trigger_id: z.string() }),
      headers: z.object({
        'X-Service-Signature': z.string().optional().openapi({ example: 'a3f1…' }),
        'webhook-id': z.string().optional().openapi({ example: 'msg_2b1f' }),
        'webhook-timestamp': z.string().optional().openapi({ example: '1767225600' }),
        'webhook-signature': z.string().optional().openapi({ example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' }),
      }),
      body: { content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } } },
    },
    responses: {
      202: { description: 'Accepted: the trigger execution', headers: counted, content: { 'application/json': { schema: z.object({ data: TriggerExecutionOut }) } } },
      400: error(
        'INVALID_REQUEST: the body is not a JSON object (after verification) or not valid JSON (before), nests deeper than 32 levels or contains NUL characters',
        responseHeaders([], RATE_LIMIT_HEADERS),
      ),
      401: error('INVALID_SIGNATURE | INVALID_HEADER'),
      404: error('TRIGGER_NOT_FOUND'),
      405: error('METHOD_NOT_ALLOWED: the trigger takes another method', responseHeaders(['Allow'])),
      409: error('TRIGGER_NOT_ACTIVE | WORKFLOW_NOT_ACTIVE | WEBHOOK_REPLAYED', responseHeaders([], RATE_LIMIT_HEADERS)),
      413: error('PAYLOAD_TOO_LARGE'),
      415: error('UNSUPPORTED_MEDIA_TYPE'),
      429: error('RATE_LIMIT_EXCEEDED', responseHeaders([...RATE_LIMIT_HEADERS, 'Retry-After'])),
      503: error('SERVICE_UNAVAILABLE: replay protection (Redis) or the database is unavailable', responseHeaders([], ['Retry-After'])),
    },
  });
}
