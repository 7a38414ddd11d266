/**
 * A typed client for the Workflow Automation Service: openapi-fetch over the types that
 * openapi-typescript generated from the service's OpenAPI document (./schema.ts).
 *
 *   const api = createWorkflowClient({ baseUrl: 'http://localhost:3000', apiKey: 'wfa_...' });
 *   const { data, error } = await api.POST('/v1/workflows', { body: { name: 'Greeter', channel: 'whatsapp' } });
 */
import createClient, { type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

export type { components, operations, paths };
/** Named schemas of the document: `Schemas['Workflow']`, `Schemas['Error']`, ... */
export type Schemas = components['schemas'];

export interface WorkflowClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** The service address without `/v1` (paths carry it), e.g. `https://api.example.com`. */
  baseUrl: string;
  /** An API key (`wfa_...`), sent as `Authorization: Bearer <key>`. */
  apiKey: string;
}

export function createWorkflowClient({ baseUrl, apiKey, headers, ...rest }: WorkflowClientOptions) {
  return createClient<paths>({ ...rest, baseUrl, headers: { ...headers, Authorization: `Bearer ${apiKey}` } });
}

export type WorkflowClient = ReturnType<typeof createWorkflowClient>;
