/**
 * The project's zod: extended once with `.openapi()` so that any schema can carry its
 * OpenAPI metadata. Import `z` from here, never from 'zod' directly, in schema modules.
 */
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

extendZodWithOpenApi(z);

export { z };
