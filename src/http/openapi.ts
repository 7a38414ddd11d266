/**
 * Owns the OpenAPI document: zod is extended once here with `.openapi()`, and every route
 * registers its schemas in the registry it is given, so the document is generated from
 * the same schemas that validate.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from './zod';


export { OpenAPIRegistry };

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

export function generateDocument(registry: OpenAPIRegistry, baseUrl: string) {
  registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (`wfa_...`) as a Bearer token.',
  });
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Workflow Automation Service API',
      version: '1.0.0',
      description: 'Workflows, triggers, executions, analytics and webhooks for customer conversations.',
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
  });
}
