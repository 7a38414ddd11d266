/** The In / Out shapes of customers and their conversation transcript. */
import { Timestamp } from '../../http/openapi';
import { paginationQuery } from '../../http/pagination';
import { z } from '../../http/zod';
import { Channel } from '../workflows/workflow.schemas';

export const CustomerOut = z
  .object({
    id: z.string().openapi({ example: 'cus_4eC39HqLyjWDarjtT1zd' }),
    channel: z.string(),
    external_id: z.string(),
    name: z.string().nullable(),
    tags: z.array(z.string()).describe('Labels for analytics segments (customer_segment)'),
    message_count: z.number().int(),
    first_seen_at: Timestamp,
    last_message_at: Timestamp.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Customer');

export const TranscriptMessageOut = z
  .object({
    id: z.string(),
    customer_id: z.string(),
    channel: z.string(),
    direction: z.enum(['inbound', 'outbound']),
    text: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    execution_id: z.string().nullable(),
    node_id: z.string().nullable(),
    delivery_status: z
      .enum(['sent', 'delivered', 'read', 'failed'])
      .nullable()
      .openapi({ description: 'Outbound messages sent through a WhatsApp or Instagram connection: what the provider last reported (only forward)' }),
    delivered_at: Timestamp.nullable(),
    read_at: Timestamp.nullable(),
    error: z
      .object({ code: z.number().nullable(), title: z.string().nullable(), message: z.string().nullable() })
      .nullable()
      .openapi({ description: "The provider's error of a failed delivery" }),
    created_at: Timestamp,
  })
  .openapi('TranscriptMessage');

export const CustomerListQuery = z.strictObject({
  ...paginationQuery,
  channel: Channel.optional(),
  external_id: z.string().min(1).max(128).optional(),
});
export const CustomerUpdateIn = z
  .strictObject({
    name: z.string().min(1).max(200).nullable().optional(),
    tags: z
      .array(z.string().min(1).max(64).regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits, "_", ".", ":" and "-" only'))
      .max(20)
      .optional()
      .describe('Replaces the tags; `new` and `returning` are reserved segment names'),
  })
  .refine((b) => !b.tags?.some((t) => t === 'new' || t === 'returning'), { message: '"new" and "returning" are reserved', path: ['tags'] })
  .openapi('CustomerUpdate');

export const CustomerParams = z.object({ customer_id: z.string().max(64) });
export const TranscriptQuery = z.strictObject({ ...paginationQuery });
