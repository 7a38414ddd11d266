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
    status: z.enum(['resumed', 'started', 'debounced', 'queued', 'skipped', 'no_match', 'ignored']).openapi({
      description:
        '`resumed`: a reply to a waiting form; `started`: at least one execution started; `debounced`: none started, it joined or opened a debounced burst (`debounce_ms`), whose one execution starts when the burst closes; `queued`: none started, at least one waits for the running one (`on_conflict: "queue"`); `skipped`: every workflow it matched already runs for this customer (`configuration.concurrency`); `no_match`; `ignored`: recorded only (`reason`)',
    }),
    reason: z
      .literal('handed_off')
      .optional()
      .openapi({ description: 'With `ignored`: the customer is handed to a person (POST /v1/customers/{id}/handoff): nothing starts or resumes' }),
    executions: z.array(
      z.union([
        z.object({
          id: z.string(),
          workflow_id: z.string(),
          trigger_id: z.string().nullable(),
          action: z.enum(['started', 'resumed', 'queued']).openapi({
            description: '`queued`: the execution is recorded with status `queued` and starts when the running one for this customer ends (`on_conflict: "queue"`)',
          }),
          replaced_execution_id: z
            .string()
            .optional()
            .openapi({ description: '`on_conflict: "replace"`: the running execution this start cancelled' }),
        }),
        z
          .object({
            id: z.string().nullable().openapi({ description: 'The execution already running for this customer (null if it ended before it could be read)' }),
            workflow_id: z.string(),
            trigger_id: z.string().nullable(),
            action: z.literal('skipped'),
            reason: z.enum(['already_running', 'queue_full']).openapi({
              description: '`already_running` (`on_conflict: "skip"`); `queue_full`: 10 executions already wait for this customer (`on_conflict: "queue"`)',
            }),
          })
          .openapi('InboundMessageSkip', { description: "The workflow's concurrency rule started nothing for it" }),
        z
          .object({
            // Nullable string, not the null type: a generated client keeps `id` on every outcome.
            id: z.string().nullable().openapi({ description: 'Always null: no execution yet, the burst starts one when it closes' }),
            burst_id: z.string().openapi({ example: 'bst_4eC39HqLyjWDarjtT1zd' }),
            workflow_id: z.string(),
            trigger_id: z.string().nullable().openapi({ description: "The debounced message trigger; null: the workflow's own keyword trigger" }),
            action: z.literal('debounced'),
            opened: z.boolean().openapi({ description: 'true: this message matched and opened the burst; false: it joined the open burst' }),
          })
          .openapi('InboundMessageDebounced', {
            description:
              "The message joined or opened a debounced burst of this customer on this channel (`debounce_ms`): the burst's one execution starts `debounce_ms` after its last message, or `max_wait_ms` after its first, with every message's text in arrival order",
          }),
      ]),
    ),
  })
  .openapi('InboundMessageResult');
