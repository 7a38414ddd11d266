/**
 * Owns the one inbound hook of channel connections: `{BASE_URL}/hooks/channels/{channel_id}`,
 * outside /v1 and its API-key pipeline; the request is handed to the connection's provider
 * (providers/index.ts), which proves it came from the provider instead.
 *
 * - GET: the provider's subscription handshake (Meta: providers/meta/meta-hook.ts).
 * - POST: the provider's signature rules (401, or Twilio's 403, and nothing recorded when they
 *   fail), then its parse of the body. JSON bodies: the body bounds of the input guard (size,
 *   nesting, NUL) apply before, as for trigger hooks. Form bodies (a provider with
 *   `hook.body: 'form'`, Twilio Messaging): parsed by `channelFormHooks` before the JSON body
 *   layer, 64 KiB at most, no NUL characters, and answered as the provider says. Each customer
 *   message goes through the per-organization intake and `receiveMessage`, the very path of
 *   `POST /v1/messages` (fair share, keyword triggers, form replies, customer creation,
 *   redeliveries by provider message id); each
 *   delivery status moves its outbound message forward. The answer is 200 as soon
 *   as the rows are committed; a message that cannot be processed is logged and still
 *   acknowledged, or Meta would redeliver the body for days.
 */
import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { AppError } from '../../http/errors';
import { ErrorOut, type OpenAPIRegistry, responseHeaders } from '../../http/openapi';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import type { InboundServices } from '../inbound/inbound-state';
import { receiveMessage } from '../inbound/message.service';
import { applyIdentityChange } from '../customers/customer-identity';
import { ChannelConnection, type ChannelSecretName } from './channel.entity';
import type { ChannelHook, HookRequest, HookSummary, ParsedHook } from './channel-provider';
import { providerOf } from './providers';
import { ownsProviderId } from './providers/meta/meta-hook';
import { channelNotFound, connectionForHook, openSecretOf } from './channel-lookup';
import { HOOK_ID_PATTERN, passedConnection, readHookForm } from './hook-forms.routes';
import { applyDeliveryStatus, inboundTimeWrite } from './message-status.writes';

const FORM_PATH = /^\/hooks\/channels\/([^/]*)$/;

export function channelHooksRouter(services: InboundServices): Router {
  const router = new Router();
  router.get('/hooks/channels/:channel_id', (ctx) => handshake(ctx, services));
  router.post('/hooks/channels/:channel_id', async (ctx) => receive(ctx, services, await hookedConnection(services, String(ctx.params.channel_id ?? ''))));
  return router;
}

/**
 * The form branch of the hook, before the JSON body layer (app.ts): a form-encoded POST to
 * `/hooks/channels/{id}` whose connection's provider posts forms (`hook.body: 'form'`, Twilio
 * Messaging) is parsed here, the exact text kept for the signature, and received as any hook.
 * Every other request is passed on (a form to a JSON provider then meets the JSON layer's 415).
 */
export function channelFormHooks(services: InboundServices) {
  // Not async: every request passes this layer, and most only pass it (docs/performance.md).
  return (ctx: Context, next: Next): Promise<void> => {
    const match = ctx.method === 'POST' ? FORM_PATH.exec(ctx.path) : null;
    if (!match || !ctx.is('application/x-www-form-urlencoded')) return next();
    return receiveForm(ctx, next, services, decodeURIComponent(match[1]!));
  };
}

async function receiveForm(ctx: Context, next: Next, services: InboundServices, id: string): Promise<void> {
  const hooked = await hookedConnection(services, id, passedConnection(ctx, id));
  if (hooked.hook.body !== 'form') return await next();
  const { rawBody, fields } = await readHookForm(ctx);
  await receive(ctx, services, hooked, { rawBody, body: fields });
}

type Hooked = { hook: ChannelHook; connection: ChannelConnection; secret: (name: ChannelSecretName) => string | undefined; url: string };

/** The connection and its provider's hook; 404 for a connection whose provider has no hook here. */
async function hookedConnection(services: Services, id: string, known?: ChannelConnection): Promise<Hooked> {
  if (!HOOK_ID_PATTERN.test(id)) throw channelNotFound();
  const connection = known ?? (await connectionForHook(services.hotPool, id));
  const provider = providerOf(connection.type);
  if (!provider.hook) throw channelNotFound();
  // The address the provider was given (behind a proxy the request's own URL may differ): what Twilio signs.
  const url = provider.webhookUrl?.(services.config, connection.id) ?? `${services.config.BASE_URL}/hooks/channels/${connection.id}`;
  return { hook: provider.hook, connection, secret: (name) => openSecretOf(services.config, connection, name), url };
}

/** A received body: the exact text and its parse (a JSON body by the JSON layer, a form by `readHookForm`). */
type ReceivedBody = { rawBody: string; body: unknown };

function jsonBody(ctx: Context): ReceivedBody {
  // koa-body 8 with includeUnparsed keeps the exact text received at `ctx.request.rawBody`.
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  return { rawBody: typeof raw === 'string' ? raw : '', body: ctx.request.body };
}

function hookRequest(ctx: Context, hooked: Hooked, { rawBody, body }: ReceivedBody): HookRequest {
  return { query: ctx.query, header: (name) => ctx.get(name), rawBody, body, url: hooked.url + (ctx.querystring ? `?${ctx.querystring}` : '') };
}

async function handshake(ctx: Context, services: Services): Promise<void> {
  const hooked = await hookedConnection(services, String(ctx.params.channel_id ?? ''));
  const answer = hooked.hook.handshake(hookRequest(ctx, hooked, jsonBody(ctx)), hooked.secret);
  ctx.status = 200;
  ctx.type = answer.type;
  ctx.body = answer.body;
}

async function receive(ctx: Context, services: InboundServices, hooked: Hooked, form?: ReceivedBody): Promise<void> {
  const { hook, connection, secret } = hooked;
  // A form provider's POST reaches the JSON route only when it is not a form (the form branch took the others).
  if (hook.body === 'form' && !form) {
    throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', `${connection.type} hooks are application/x-www-form-urlencoded`);
  }
  const req = hookRequest(ctx, hooked, form ?? jsonBody(ctx));
  hook.verify(req, secret);
  const { items, content } = hook.parse(connection, req.body);
  const log = services.logger.child({ channel_connection_id: connection.id, request_id: ctx.state.requestId ?? null });
  const summary: HookSummary = { messages: 0, duplicates: 0, statuses: 0, ignored: 0, failed: 0 };
  if (!content || connection.status === 'disabled') {
    log.warn({ type: connection.type, status: connection.status }, 'channel hook body not for this connection, or the connection is disabled: acknowledged, ignored');
    summary.ignored = items;
  } else {
    await processContent(services, connection, content, summary, log);
  }
  ctx.status = 200;
  const answer = hook.answer?.(summary);
  if (answer) {
    ctx.type = answer.type;
    ctx.body = answer.body;
  } else {
    ctx.body = { data: summary };
  }
}

/**
 * The connection an item is for: one app webhook serves every number (page, account) of the
 * business, so each item names its own (`to`: WhatsApp's `metadata.phone_number_id`,
 * Instagram's `entry.id`), and goes to the organization's connection owning that id. An id
 * none of the organization's active connections owns is acknowledged and ignored (logged
 * with the id, never the body).
 */
function itemRouter(services: Services, hooked: ChannelConnection, log: Services['logger']) {
  let owned: Promise<ChannelConnection[]> | undefined;
  return async (to: string | undefined): Promise<ChannelConnection | undefined> => {
    if (to === undefined || ownsProviderId(hooked, to)) return hooked;
    owned ??= services.orm.em.fork().find(ChannelConnection, { organizationId: hooked.organizationId, type: hooked.type, deletedAt: null, status: { $ne: 'disabled' } });
    const owner = (await owned).find((c) => ownsProviderId(c, to));
    if (!owner) log.warn({ to }, 'channel hook item for an id no connection of the organization owns: acknowledged, ignored');
    return owner;
  };
}

async function processContent(services: InboundServices, hooked: ChannelConnection, content: ParsedHook, summary: HookSummary, log: Services['logger']) {
  summary.ignored += content.ignored;
  const em = services.orm.em.fork();
  const route = itemRouter(services, hooked, log);
  for (const change of content.identityChanges ?? []) {
    const c = await route(change.to);
    if (!c) {
      summary.ignored++;
      continue;
    }
    try {
      await applyIdentityChange(em, { ...change, organizationId: c.organizationId, channel: c.channel });
    } catch (err) {
      summary.failed++;
      log.error({ err, kind: change.kind }, 'channel hook identity change could not be applied');
    }
  }
  for (const m of content.messages) {
    const c = await route(m.to);
    if (!c) {
      summary.ignored++;
      continue;
    }
    try {
      // The intake of POST /v1/messages (inbound-state.ts): one organization's flood through its
      // provider waits its turn there while other organizations' messages are recorded.
      const received = await services.intake.run(c.organizationId, () =>
        receiveMessage(
          services,
          c.organizationId,
          {
            channel: c.channel,
            customer_id: m.externalId,
            message: m.text,
            metadata: { ...m.metadata, channel_connection_id: c.id },
            ...(m.name ? { customer: { name: m.name } } : {}),
            provider_message_id: m.providerMessageId,
          },
          undefined,
          // The customer's window on the connection, in the message's statement.
          { companion: inboundTimeWrite(c.id, m.externalId, m.sentAt) },
        ),
      );
      if (received.duplicate) summary.duplicates++;
      else summary.messages++;
    } catch (err) {
      // Acknowledged all the same: Meta would redeliver the whole body for days otherwise.
      summary.failed++;
      log.error({ err, provider_message_id: m.providerMessageId }, 'channel hook message could not be processed');
    }
  }
  for (const s of content.statuses) {
    const c = await route(s.to);
    if (!c) {
      summary.ignored++;
      continue;
    }
    try {
      if (await applyDeliveryStatus(em, c.organizationId, c.id, s)) summary.statuses++;
      else summary.ignored++;
    } catch (err) {
      summary.failed++;
      log.error({ err, provider_message_id: s.providerMessageId }, 'channel hook status could not be applied');
    }
  }
}

/** The hook in the OpenAPI document: outside /v1, authenticated by Meta's verify token and signature. */
export function registerChannelHookDocs(registry: OpenAPIRegistry): void {
  const error = (description: string) => ({ description, headers: responseHeaders([]), content: { 'application/json': { schema: ErrorOut } } });
  const params = z.object({ channel_id: z.string() });
  registry.registerPath({
    method: 'get',
    path: '/hooks/channels/{channel_id}',
    operationId: 'verifyChannelHook',
    summary: "Meta's webhook verification handshake (the connection's `webhook_url` and `verify_token`)",
    tags: ['Channels'],
    security: [],
    request: {
      params,
      query: z.object({
        'hub.mode': z.literal('subscribe'),
        'hub.verify_token': z.string(),
        'hub.challenge': z.string().openapi({ example: '1158201444' }),
      }),
    },
    responses: {
      200: { description: 'The challenge, echoed', headers: responseHeaders([]), content: { 'text/plain': { schema: z.string() } } },
      400: error('INVALID_REQUEST: NUL characters in the query'),
      403: error('INVALID_VERIFY_TOKEN'),
      404: error('CHANNEL_NOT_FOUND: no such connection with a hook here'),
      405: error('METHOD_NOT_ALLOWED: a twilio_messaging connection (Twilio only posts)'),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/hooks/channels/{channel_id}',
    operationId: 'receiveChannelHook',
    summary: 'Receive a channel provider\'s webhooks (Meta, Twilio): customer messages and delivery statuses',
    description:
      'Signed by Meta: `X-Hub-Signature-256: sha256=<lowercase hex HMAC-SHA256 of the raw body keyed with the app secret>`. ' +
      'WhatsApp `entry[].changes[].value.messages[]` and Instagram `entry[].messaging[]` are processed as `POST /v1/messages` ' +
      '(a repeated wamid / mid changes nothing); WhatsApp `value.statuses[]` update the delivery status of our outbound messages. ' +
      'Always 200 once verified and committed, also when an item could not be processed (logged). ' +
      'A `twilio_voice` connection\'s hook takes Twilio\'s form-encoded call requests here and answers TwiML (`text/xml`), ' +
      'as `receiveVoiceHook` describes. A `twilio_messaging` connection\'s hook takes Twilio\'s form-encoded incoming messages ' +
      '(`MessageSid`, `From`, `To`, `Body`, `NumMedia`…: processed as `POST /v1/messages`) and status callbacks (`MessageStatus`, `ErrorCode`: ' +
      'delivery statuses of our sends), and answers an empty TwiML `<Response/>`. A Twilio request whose `X-Twilio-Signature` does not hold is a 403.',
    tags: ['Channels'],
    security: [],
    request: {
      params,
      headers: z.object({ 'X-Hub-Signature-256': z.string().openapi({ example: 'sha256=5f2b…' }) }),
      body: {
        content: {
          'application/json': { schema: z.object({ object: z.enum(['whatsapp_business_account', 'instagram', 'page']), entry: z.array(z.record(z.string(), z.unknown())) }) },
          'application/x-www-form-urlencoded': {
            schema: z.record(z.string(), z.string()).openapi({ description: "Twilio's parameters: a call's (twilio_voice connections; see receiveVoiceHook), or an incoming message's or a message status callback's (twilio_messaging)" }),
          },
        },
      },
    },
    responses: {
      200: {
        description: 'Acknowledged: what was done with the items',
        headers: responseHeaders([]),
        content: {
          'application/json': {
            schema: z.object({
              data: z.object({
                messages: z.number().int(),
                duplicates: z.number().int(),
                statuses: z.number().int(),
                ignored: z.number().int(),
                failed: z.number().int(),
              }),
            }),
          },
          'text/xml': { schema: z.string().openapi({ description: 'TwiML: the answer to a twilio_voice connection\'s call request, or an empty `<Response/>` to a twilio_messaging request' }) },
        },
      },
      400: error('INVALID_REQUEST: not valid JSON (before the signature), NUL characters or too deep (before), or not a Meta webhook object or a Twilio message request (after)'),
      401: error('INVALID_SIGNATURE'),
      403: error('INVALID_SIGNATURE or WRONG_NUMBER: a Twilio request not signed for this URL, or a call to another number than the connection\'s'),
      404: error('CHANNEL_NOT_FOUND'),
      413: error('PAYLOAD_TOO_LARGE'),
      415: error('UNSUPPORTED_MEDIA_TYPE'),
      503: error('SERVICE_UNAVAILABLE: the database is unavailable'),
    },
  });
}
