/** The In / Out shapes of customers and their conversation transcript. */
import { Timestamp } from '../../http/openapi';
import { paginationQuery } from '../../http/pagination';
import { isoDateTime } from '../../http/validation';
import { z } from '../../http/zod';
import { Channel } from '../workflows/workflow.schemas';

export const HandoffOut = z
  .object({
    since: Timestamp,
    until: Timestamp.openapi({ description: 'When it ends by itself (DELETE ends it sooner)' }),
    reason: z.string().nullable().openapi({ description: 'As given to POST …/handoff; `low_confidence` for an ai_response node with `fallback: "handoff"`' }),
  })
  .openapi('Handoff', { description: 'A person handles this customer: their messages are recorded but start and resume no execution (docs/handoff.md)' });

export const HandoffIn = z
  .strictObject({
    reason: z.string().trim().min(1).max(500).optional(),
    until: isoDateTime.optional().openapi({ description: 'When the handoff ends by itself: in the future, at most 7 days away (default: 24 hours from now)' }),
    channel: Channel.optional().openapi({ description: "The customer's channel (a customer has one; another is refused)" }),
  })
  .openapi('HandoffStart');

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
    handoff: HandoffOut.nullable().openapi({ description: 'The handoff in force; null when none' }),
  })
  .openapi('Customer');

export const TranscriptMessageOut = z
  .object({
    id: z.string(),
    customer_id: z.string(),
    channel: z.string(),
    direction: z.enum(['inbound', 'outbound']),
    sender: z
      .enum(['customer', 'bot', 'agent'])
      .openapi({ description: 'Who wrote it: the customer (inbound), a workflow (outbound), or a person (POST /v1/customers/{id}/messages)' }),
    text: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    execution_id: z.string().nullable(),
    node_id: z.string().nullable(),
    delivery_status: z
      .enum(['pending', 'sent', 'delivered', 'read', 'failed'])
      .nullable()
      .openapi({
        description:
          'Outbound messages sent through a WhatsApp or Instagram connection: what the provider last reported (only forward). An agent message is `pending` until its send ends, then `sent` or `failed` (with `error`) when no provider reports on it',
      }),
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

export const AgentMessageIn = z
  .strictObject({
    text: z.string().trim().min(1).max(4096).openapi({ description: "The person's message, sent as is (WhatsApp's limit for a text body is 4096 characters)" }),
    channel: Channel.optional().openapi({ description: "The customer's channel; when given it must be theirs" }),
  })
  .openapi('AgentMessageIn');

export const CustomerParams = z.object({ customer_id: z.string().max(64) });
export const TranscriptQuery = z.strictObject({ ...paginationQuery });
