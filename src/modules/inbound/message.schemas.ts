/** The In / Out shapes of inbound customer messages (`POST /v1/messages`). */
import { z } from '../../http/zod';
import { Channel } from '../workflows/workflow.schemas';

const boundedMetadata = z
  .record(z.string(), z.unknown())
  .refine((v) => JSON.stringify(v).length <= 16_384, 'metadata must be at most 16 KiB of JSON');

export const MessageIn = z
  .strictObject({
    channel: Channel,
    customer_id: z
      .string()
      .trim()
      .min(1, 'customer_id must not be empty')
      .max(128)
      .openapi({ description: "The customer's identifier on the channel (phone number, handle)", example: '+14155550100' }),
    message: z.string().min(1, 'message must not be empty').max(4096),
    metadata: boundedMetadata
      .optional()
      .openapi({ description: 'Free-form; `language` (a language code) is matched against message triggers' }),
    customer: z.strictObject({ name: z.string().trim().min(1).max(200).optional() }).optional(),
    provider_message_id: z
      .string()
      .trim()
      .min(1, 'provider_message_id must not be empty')
      .max(255)
      .optional()
      .openapi({
        description:
          "The channel provider's id of this message. A message with an id already received on this channel is a redelivery: it answers 200 with the first outcome and starts nothing",
        example: 'wamid.HBgLMTQxNTU1NTAxMDAVAgARGBI',
      }),
  })
  .openapi('InboundMessage');

export const InboundResultOut = z
  .object({
    message_id: z.string(),
    customer_id: z.string(),
    status: z.enum(['resumed', 'started', 'skipped', 'no_match']).openapi({
      description:
        '`resumed`: a reply to a waiting form; `started`: at least one execution started; `skipped`: every workflow it matched already runs for this customer (`configuration.concurrency`); `no_match`',
    }),
    executions: z.array(
      z.union([
        z.object({ id: z.string(), workflow_id: z.string(), trigger_id: z.string().nullable(), action: z.enum(['started', 'resumed']) }),
        z
          .object({
            id: z.string().nullable().openapi({ description: 'The execution already running for this customer (null if it ended before it could be read)' }),
            workflow_id: z.string(),
            trigger_id: z.string().nullable(),
            action: z.literal('skipped'),
            reason: z.literal('already_running'),
          })
          .openapi('InboundMessageSkip', { description: "The workflow's concurrency rule (`on_conflict: \"skip\"`) started nothing for it" }),
      ]),
    ),
  })
  .openapi('InboundMessageResult');
