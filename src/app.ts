/**
 * Builds the Koa application without listening, so tests and the server share the same
 * wiring: first the API's own state on top of the shared `Services` (`createApiServices`:
 * the credential verifiers and the authenticator that asks them, the OAuth server, the
 * inbound caches), then the app. Order: request id + access log + error envelope → OAuth
 * server → JSON body and input guard (NUL characters, nesting) → routes (by path prefix)
 * with the 404/405 fallbacks. There is no ORM request context (AsyncLocalStorage costs every promise of every
 * request): each service gets its own `em.fork()`.
 */
import { agentMessageRoutes } from './modules/channels/agent-message.routes';
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import path from 'node:path';
import Router from '@koa/router';
import Koa, { type Context, type Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { answerClientErrors } from './http/client-errors';
import { AppError } from './http/errors';
import { deferInputRefusal, inputGuard, refusesAfterAuthentication } from './http/input-guard';
import { requestContext, withNotFoundFallback } from './http/middleware';
import { generateDocument, OpenAPIRegistry, registerOperationalDocs } from './http/openapi';
import { routeByPrefix } from './http/prefix-router';
import { forwardedByTrustedProxies } from './http/trusted-proxies';
import { parseTrustProxy } from './proxy-trust';
import { Authenticator } from './http/auth';
import { type AnyRoute, mountRoutes } from './http/route';
import { type ApiKeyVerifier, createApiKeyVerifier } from './modules/api-keys/api-key-verifier';
import { createJwtVerifier, type JwtVerifier } from './modules/applications/jwt-verifier';
import { createInboundState, type InboundState } from './modules/inbound/inbound-state';
import { createOAuthState, type OAuthState } from './modules/oauth/oauth-state';
import { apiKeyRoutes } from './modules/api-keys/api-key.routes';
import { applicationRoutes } from './modules/applications/application.routes';
import { userRoutes } from './modules/users/user.routes';
import { oauthClientRoutes } from './modules/oauth/oauth-client.routes';
import { oauthMiddleware } from './modules/oauth/oauth-server';
import { registerOAuthDocs } from './modules/oauth/oauth.docs';
import { customerRoutes } from './modules/customers/customer.routes';
import { handoffRoutes } from './modules/handoffs/handoff.routes';
import { executionRoutes } from './modules/executions/execution.routes';
import { inboundRoutes } from './modules/inbound/message.routes';
import { replayRoutes } from './modules/replays/replay.routes';
import { dryRunRoutes } from './modules/dry-runs/dry-run.routes';
import { knowledgeBaseRoutes } from './modules/knowledge-bases/knowledge-base.routes';
import { exportRoutes } from './modules/exports/export.routes';
import { reportRoutes } from './modules/reports/report.routes';
import { registerTriggerReceiverDocs, triggerReceiverRouter } from './modules/inbound/trigger-receiver';
import { triggerRoutes } from './modules/triggers/trigger.routes';
import { workflowRoutes } from './modules/workflows/workflow.routes';
import { webhookRoutes } from './modules/webhooks/webhook.routes';
import { analyticsRoutes } from './modules/analytics/analytics.routes';
import { channelRoutes } from './modules/channels/channel.routes';
import { channelFormHooks, channelHooksRouter, registerChannelHookDocs } from './modules/channels/channel-hooks.routes';
import { registerVoiceHookDocs, voiceHooks } from './modules/channels/providers/twilio_voice/voice-hooks.routes';
import { registerWebhookEventDocs } from './modules/webhooks/webhook.events-doc';
import { metricsExposition, type Services } from './services';
import { readinessChecks } from './readiness';
import { tracingOn } from './telemetry/state';
import { traceRoute } from './telemetry/koa-route';

/** What the API serves with: the shared infrastructure and the modules' own state. */
export type ApiServices = Services &
  OAuthState &
  InboundState & {
    /** Reads the Bearer credential with the verifiers below (src/http/auth.ts). */
    authenticator: Authenticator;
    apiKeys: ApiKeyVerifier;
    jwtVerifier: JwtVerifier;
  };

/** Builds the modules' state an API process needs; a worker needs none of it. */
export async function createApiServices(services: Services): Promise<ApiServices> {
  const apiKeys = createApiKeyVerifier(services);
  const jwtVerifier = createJwtVerifier(services);
  const oauth = await createOAuthState(services);
  // The first verifier that accepts a token decides: a `wfa_` token is always an API key, and
  // API keys, the hottest credential, are recognised with the cheapest test.
  const authenticator = new Authenticator([apiKeys, jwtVerifier, oauth.oauthTokens]);
  return { ...services, ...oauth, ...createInboundState(services), authenticator, apiKeys, jwtVerifier };
}

/** Every module's routes; a new module adds its factory here. */
export const ROUTE_FACTORIES: Array<(s: ApiServices) => AnyRoute[]> = [
  apiKeyRoutes,
  workflowRoutes,
  webhookRoutes,
  triggerRoutes,
  // Before executionRoutes: keeps the document's path order (POST /v1/messages came first there).
  inboundRoutes,
  executionRoutes,
  customerRoutes,
  agentMessageRoutes,
  handoffRoutes,
  knowledgeBaseRoutes,
  analyticsRoutes,
  applicationRoutes,
  userRoutes,
  oauthClientRoutes,
  exportRoutes,
  reportRoutes,
  replayRoutes,
  dryRunRoutes,
  channelRoutes,
];

/** Routers outside /v1 that every app mounts (receivers that authenticate requests their own way). */
const EXTRA_ROUTER_FACTORIES: Array<(s: ApiServices) => Router> = [triggerReceiverRouter, channelHooksRouter];

export const MAX_BODY_BYTES = 1024 * 1024;

export function createApp(services: ApiServices) {
  const trust = parseTrustProxy(services.config.TRUST_PROXY);
  // X-Forwarded-* count only when TRUST_PROXY names our proxies (src/http/trusted-proxies.ts).
  const app = new Koa({ proxy: trust.kind !== 'none' });
  const router = new Router();

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const checks = await readinessChecks(services);
    const ready = Object.values(checks).every((v) => v === 'ok');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ok' : 'unavailable', checks };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = services.metrics.registry.contentType;
    ctx.body = await metricsExposition(services.metrics);
  });

  const document = mountApi(router, services);
  router.get('/v1/openapi.json', (ctx) => {
    ctx.body = document();
  });
  mountDocs(router);

  // Only behind configured proxies: without them Koa ignores X-Forwarded-* and costs nothing.
  if (trust.kind !== 'none') app.use(forwardedByTrustedProxies(trust));
  // Four layers, each as cheap as it can be: every layer costs every request (docs/performance.md).
  // With tracing on, the server span is named after the matched route (telemetry/koa-route.ts).
  if (tracingOn()) app.use(traceRoute);
  app.use(requestContext(services.logger, services.metrics, services));
  // The OAuth server and its pages take form bodies and answer in OAuth's own shapes.
  app.use(oauthMiddleware(services));
  // Twilio's voice hook takes form bodies and answers TwiML.
  app.use(voiceHooks(services));
  // Channel providers that post forms (Twilio Messaging) at the one channel hook route.
  app.use(channelFormHooks(services));
  app.use(jsonBodyThenInputGuard);
  // All the routers in one, each request tested against the few routes of its path prefix.
  app.use(withNotFoundFallback(routeByPrefix([...EXTRA_ROUTER_FACTORIES.map((f) => f(services)), router])));
  return { app };
}

/**
 * Mounts every /v1 route on `router` and returns the OpenAPI document that describes them
 * and the routes outside /v1, built on first use: generating it costs ~0.3 s of CPU, which
 * every process start (and every test file's app) paid although few ever serve it.
 */
function mountApi(router: Router, services: ApiServices): () => ReturnType<typeof generateDocument> {
  const registry = new OpenAPIRegistry();
  for (const factory of ROUTE_FACTORIES) mountRoutes(router, registry, services, factory(services));
  registerWebhookEventDocs(registry);
  registerTriggerReceiverDocs(registry);
  registerChannelHookDocs(registry);
  registerVoiceHookDocs(registry);
  registerOAuthDocs(registry);
  registerOperationalDocs(registry);
  let document: ReturnType<typeof generateDocument> | undefined;
  return () => (document ??= generateDocument(registry, services.config.BASE_URL));
}

/** Listens with the app, and answers requests Node's parser refuses in the same envelope. */
export async function listen(app: Koa, services: Services, port: number, host: string): Promise<Server> {
  const server = app.listen(port, host);
  answerClientErrors(server, services.logger);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return server;
}

const parseJsonBody = koaBody({
  json: true,
  urlencoded: false,
  text: false,
  multipart: false,
  jsonLimit: MAX_BODY_BYTES,
  jsonStrict: true,
  includeUnparsed: true,
  // Malformed JSON on /v1 is answered by the route, after authentication (src/http/input-guard.ts);
  // anywhere else, and a body over the limit anywhere, at once.
  onError: (err, ctx) => {
    if (!refusesAfterAuthentication(ctx as Context) || (err as { status?: number }).status === 413) throw err;
    deferInputRefusal(ctx as Context, err);
  },
  parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
});

/**
 * Bodies are JSON only: anything else with content is 415 before it is read, more than
 * 1 MiB is 413; then the JSON parser and the input guard. One middleware, and a request
 * without a body (most GETs) skips the parser, which would find nothing to parse: every
 * layer costs each request a few promises (docs/performance.md). Not async for the same
 * reason; its throws become rejections in Koa's dispatcher.
 */
function jsonBodyThenInputGuard(ctx: Context, next: Next) {
  const length = Number(ctx.get('content-length') || 0);
  const hasBody = length > 0 || ctx.get('transfer-encoding') !== '';
  if (!hasBody) return inputGuard(ctx, next);
  if (!ctx.is('application/json', 'application/*+json')) {
    throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json');
  }
  if (length > MAX_BODY_BYTES) throw new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body exceeds 1 MiB');
  return parseJsonBody(ctx, () => inputGuard(ctx, next));
}

const SWAGGER_ASSETS = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png']);

/** The API reference at /docs: Swagger UI from the swagger-ui-dist package, no CDN. */
function mountDocs(router: Router) {
  const assetDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  router.get('/docs', (ctx) => {
    ctx.type = 'html';
    ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Workflow Automation API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"><link rel="icon" href="/docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#swagger-ui' });</script></body></html>`;
  });
  router.get('/docs/assets/:file', async (ctx) => {
    const file = ctx.params.file ?? '';
    if (!SWAGGER_ASSETS.has(file)) return;
    ctx.type = path.extname(file);
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = await readFile(path.join(assetDir, file));
  });
}

/**
 * The OpenAPI document without a running service (client generation, lint): route
 * factories and registrations use their services only inside handlers, so every
 * dependency but the configuration is a stand-in that throws if anything touches it.
 */
export function openApiDocument(config: Services['config']) {
  const unavailable = (name: PropertyKey): never => {
    throw new Error(`openApiDocument: services.${String(name)} is not available while only building the document`);
  };
  const poison = (name: PropertyKey) => new Proxy(() => undefined, { get: () => unavailable(name), apply: () => unavailable(name) });
  const services = new Proxy({} as ApiServices, { get: (_, name) => (name === 'config' ? config : poison(name)) });
  return mountApi(new Router(), services)();
}
