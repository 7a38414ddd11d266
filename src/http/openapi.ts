/**
 * Owns the OpenAPI document: zod is extended once here with `.openapi()`, and every route
 * registers its schemas in the registry it is given, so the document is generated from
 * the same schemas that validate.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { SCOPE_WORDS } from '../credentials/scopes';
import { splitInputOutputSchemas } from './openapi-io';
import { z } from './zod';

export { OpenAPIRegistry };

/** An ISO 8601 UTC timestamp as the API writes it (`Date#toISOString`). */
export const Timestamp = z.iso.datetime().openapi({ example: '2026-11-22T10:00:00.000Z' });

type HeaderObject = { description: string; required?: boolean; schema: { type: 'string' | 'integer'; minimum?: number; enum?: string[]; example?: string } };
const integer = { type: 'integer' as const, minimum: 0 };

/** Response headers, declared once under components/headers; responses reference them. */
const RESPONSE_HEADERS = {
  'X-Request-Id': { description: 'The request id (a well-formed incoming `X-Request-Id` is echoed); also in the logs', schema: { type: 'string' as const } },
  'X-RateLimit-Limit': { description: 'Size of the limit with the least room left (every applicable limit is counted)', schema: integer },
  'X-RateLimit-Remaining': { description: 'Requests left in that limit\'s window', schema: integer },
  'X-RateLimit-Reset': { description: 'When that window resets, in Unix seconds', schema: integer },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: integer },
  'Idempotent-Replayed': { description: 'Present (`true`) when this is the stored answer to an earlier request with the same Idempotency-Key', required: false, schema: { type: 'string' as const, enum: ['true'] } },
  'WWW-Authenticate': { description: 'The Bearer challenge', schema: { type: 'string' as const, example: 'Bearer' } },
  Allow: { description: 'The methods the resource accepts', schema: { type: 'string' as const, example: 'POST' } },
  'Content-Disposition': { description: 'A download: `attachment; filename="…"`', schema: { type: 'string' as const, example: 'attachment; filename="executions-2026-11-22-exp_1.csv"' } },
  'Cache-Control': { description: 'Caching directives (`no-cache` on event streams)', schema: { type: 'string' as const } },
  'X-Accel-Buffering': { description: '`no`: asks a reverse proxy not to buffer the event stream', schema: { type: 'string' as const, enum: ['no'] } },
  Location: { description: 'Where the redirect goes', schema: { type: 'string' as const } },
  'Set-Cookie': { description: 'The authorization server\'s session and interaction cookies (HttpOnly)', schema: { type: 'string' as const } },
  'Access-Control-Allow-Origin': { description: 'CORS: the OAuth endpoints may be called from browsers (`*`)', schema: { type: 'string' as const } },
  'Access-Control-Expose-Headers': { description: 'CORS: the headers a browser script may read', schema: { type: 'string' as const } },
  'X-Export-Id': { description: 'With include_metadata (csv, json): the export id', schema: { type: 'string' as const } },
  'X-Export-Generated-At': { description: 'With include_metadata (csv, json): when the file was generated (ISO 8601)', schema: { type: 'string' as const } },
  'X-Export-Row-Count': { description: 'With include_metadata (csv, json): data rows in the file', schema: integer },
  'X-Export-Filters': { description: 'With include_metadata (csv, json): the filters as ASCII JSON', schema: { type: 'string' as const } },
} satisfies Record<string, HeaderObject>;
export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;
export const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] as const;

const headerRef = (name: ResponseHeaderName) => ({ $ref: `#/components/headers/${name}` });
const alwaysOptional = (name: ResponseHeaderName) => (RESPONSE_HEADERS[name] as HeaderObject).required === false;

/**
 * The `headers` of a documented response: references to the shared components (which are
 * required unless the header is optional by nature), and `optional` names that are
 * required elsewhere inlined with `required: false`.
 */
export function responseHeaders(required: readonly ResponseHeaderName[], optional: readonly ResponseHeaderName[] = []) {
  const headers: Record<string, HeaderObject | { $ref: string }> = {};
  for (const name of ['X-Request-Id', ...required] as const) headers[name] = headerRef(name);
  for (const name of optional) headers[name] = alwaysOptional(name) ? headerRef(name) : { ...RESPONSE_HEADERS[name], required: false };
  return headers;
}

export const ErrorOut = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: 'INVALID_REQUEST' }),
      message: z.string(),
      details: z.string().optional(),
      field: z.string().optional().openapi({ example: 'configuration.nodes[0].content' }),
      retry_after: z.number().int().optional(),
    }),
  })
  .openapi('Error');

export const MessageOut = z.object({ message: z.string() }).openapi('DeleteResult');

const ReadinessOut = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    checks: z.object({ postgres: z.enum(['ok', 'unavailable']), redis: z.enum(['ok', 'unavailable']), temporal: z.enum(['ok', 'unavailable']) }),
  })
  .openapi('Readiness');

/** /healthz, /readyz and /metrics (outside /v1, no credentials): for orchestrators and Prometheus. */
export function registerOperationalDocs(registry: OpenAPIRegistry): void {
  const json = (schema: z.ZodType) => ({ 'application/json': { schema } });
  const common = { tags: ['Operations'], security: [] };
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    summary: 'Liveness: the process is up',
    responses: { 200: { description: 'Up', headers: responseHeaders([]), content: json(z.object({ status: z.literal('ok') }).openapi('Health')) } },
  });
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    summary: 'Readiness: PostgreSQL, Redis and Temporal reachable',
    responses: {
      200: { description: 'Ready', headers: responseHeaders([]), content: json(ReadinessOut) },
      503: { description: 'A dependency is unreachable (named in `checks`)', headers: responseHeaders([]), content: json(ReadinessOut) },
    },
  });
  registry.registerPath({
    ...common,
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics (text exposition format)',
    responses: {
      200: {
        description: 'Prometheus text format 0.0.4',
        headers: responseHeaders([]),
        content: { 'text/plain': { schema: z.string().openapi({ example: 'http_requests_total{method="GET",route="/v1/workflows",status="200"} 3' }) } },
      },
    },
  });
}

export function generateDocument(registry: OpenAPIRegistry, baseUrl: string) {
  for (const [name, header] of Object.entries(RESPONSE_HEADERS)) registry.registerComponent('headers', name, { required: true, ...header });
  registry.registerComponent('securitySchemes', 'apiKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (`wfa_...`) as a Bearer token; its permission level decides what it may do.',
  });
  registry.registerComponent('securitySchemes', 'oauth2', {
    type: 'oauth2',
    description: 'An OAuth 2.0 access token (opaque, 1 h) as a Bearer token, after a user of the organization consented. PKCE S256 is required for public clients.',
    flows: {
      authorizationCode: {
        authorizationUrl: `${baseUrl}/oauth/authorize`,
        tokenUrl: `${baseUrl}/oauth/token`,
        refreshUrl: `${baseUrl}/oauth/token`,
        scopes: SCOPE_WORDS,
      },
    },
  });
  registry.registerComponent('securitySchemes', 'jwt', {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'A JWT signed by a registered application (RS256, PS256, ES256 or EdDSA): iss = application id, aud, sub, iat, exp ≤ iat + 1 h, scope; valid for every request until exp, or single-use with a jti when the application has require_jti.',
  });
  const document = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Workflow Automation Service API',
      version: '1.0.0',
      description:
        'Workflows, triggers, executions, analytics and webhooks for customer conversations. ' +
        'Every response carries `X-Request-Id`. A method a path does not take is 405 METHOD_NOT_ALLOWED with `Allow`; ' +
        'an unknown path is 404 NOT_FOUND; a request body that is not JSON is 415 and one over 1 MiB is 413, on any path.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: baseUrl }],
    security: [{ apiKey: [] }, { oauth2: [] }, { jwt: [] }],
  });
  // Requests in zod's input mode (defaulted fields optional), responses in output mode (present).
  return splitInputOutputSchemas(document as unknown as Record<string, unknown>) as unknown as typeof document;
}
