/** Config field shapes several providers share (`/v1/channels`). */
import { z } from '../../../http/zod';

/** A write-only secret: sealed at rest, never returned. */
export const secretField = (description: string) => z.string().min(1).max(4096).openapi({ description: `${description} Write-only: never returned.` });

/** Meta's ids are numeric strings; bounded so that they sit safely in a URL path. */
export const graphIdField = (what: string) =>
  z.string().trim().regex(/^\d{1,64}$/, `${what} must be Meta's numeric id`).openapi({ example: '106540352242922' });
