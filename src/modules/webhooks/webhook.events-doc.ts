/**
 * Owns the OpenAPI description of what webhooks receive: the event envelope and the `data`
 * of each event type (the spec shows the workflow events' fields; the others
 * are what their emitters write — executions, customers/messages and triggers modules),
 * registered as OpenAPI 3.1 `webhooks` so clients see every payload in /v1/openapi.json.
 */
import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import { Timestamp } from '../../http/openapi';
import { z } from '../../http/zod';
import { EVENT_TYPES, type EventType } from '../events/event.entity';
import { WEBHOOK_DISABLED_REASONS } from './webhook.entity';

const Channel = z.string().openapi({ example: 'whatsapp' });

const WorkflowEventData = z
  .object({
    workflow_id: z.string(),
    execution_id: z.string(),
    status: z.enum(['running', 'success', 'failed', 'cancelled']).openapi({
      description: 'workflow.started: running; workflow.completed: success, failed or cancelled (a cancelled execution); workflow.failed: failed',
    }),
    duration_ms: z.number().int().openapi({ description: '0 for workflow.started' }),
    customer_id: z.string().nullable(),
    channel: Channel,
  })
  .openapi('WorkflowEventData');

const WorkflowFailedEventData = WorkflowEventData.extend({
  error_type: z.string().nullable(),
  error_message: z.string().nullable(),
}).openapi('WorkflowFailedEventData');

const MessageReceivedEventData = z
  .object({
    message_id: z.string(),
    customer_id: z.string(),
    external_id: z.string().openapi({ description: "The customer's id on the channel" }),
    channel: Channel,
    text: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    execution_id: z.string().nullable().openapi({ description: 'The execution waiting for this reply, if any' }),
  })
  .openapi('MessageReceivedEventData');

const MessageSentEventData = z
  .object({
    message_id: z.string(),
    customer_id: z.string(),
    channel: Channel,
    text: z.string(),
    sender: z.literal('agent').optional().openapi({ description: 'Present for a message a person sent (POST /v1/customers/{id}/messages); absent for a workflow node' }),
    workflow_id: z.string().nullable().openapi({ description: 'Null for an agent message' }),
    execution_id: z.string().nullable().openapi({ description: 'Null for an agent message' }),
    node_id: z.string().nullable().openapi({ description: 'Null for an agent message' }),
  })
  .openapi('MessageSentEventData');

const MessageStatusUpdatedEventData = z
  .object({
    message_id: z.string(),
    customer_id: z.string(),
    channel: Channel,
    execution_id: z.string().nullable(),
    channel_connection_id: z.string(),
    provider_message_id: z.string().openapi({ description: 'The wamid Meta gave the message' }),
    delivery_status: z.enum(['sent', 'delivered', 'read', 'failed']),
    delivered_at: z.string().nullable(),
    read_at: z.string().nullable(),
    error: z
      .object({ code: z.number().nullable(), title: z.string().nullable(), message: z.string().nullable() })
      .nullable()
      .openapi({ description: "Meta's error, when failed" }),
  })
  .openapi('MessageStatusUpdatedEventData');

const TriggerActivatedEventData = z
  .object({
    trigger_id: z.string(),
    trigger_execution_id: z.string(),
    trigger_type: z.enum(['message', 'schedule', 'webhook', 'api']),
    workflow_id: z.string(),
    channel: Channel,
    customer_id: z.string().nullable(),
    triggered_at: Timestamp,
  })
  .openapi('TriggerActivatedEventData');

const CustomerEventData = z
  .object({
    customer_id: z.string(),
    external_id: z.string(),
    channel: Channel,
    name: z.string().nullable(),
    changed: z.array(z.string()).optional().openapi({ description: 'customer.updated: the fields that changed' }),
  })
  .openapi('CustomerEventData');

const HandoffEventData = z
  .object({
    handoff_id: z.string(),
    customer_id: z.string(),
    external_id: z.string().openapi({ description: "The customer's id on the channel" }),
    channel: Channel,
    reason: z.string().nullable().openapi({ description: 'The reason given to POST /v1/customers/{id}/handoff, or `low_confidence` (an ai_response node with `fallback: "handoff"`)' }),
    since: Timestamp,
    until: Timestamp.openapi({ description: 'When the handoff ends by itself' }),
    execution_id: z.string().nullable().openapi({ description: 'The execution that handed the customer off (`low_confidence`), else null' }),
    ended_at: Timestamp.optional().openapi({ description: 'conversation.handoff_ended' }),
    end_reason: z
      .enum(['deleted', 'expired'])
      .optional()
      .openapi({ description: 'conversation.handoff_ended: `deleted` (DELETE /v1/customers/{id}/handoff) or `expired` (`until` passed)' }),
  })
  .openapi('HandoffEventData');

const FileError = z.object({ code: z.string(), message: z.string() });

const ExportEventData = z
  .object({
    export_id: z.string(),
    data_type: z.string(),
    format: z.enum(['csv', 'json', 'xlsx']),
    status: z.enum(['completed', 'failed']),
    row_count: z.number().int().optional().openapi({ description: 'export.completed' }),
    file_size: z.number().int().optional().openapi({ description: 'export.completed: bytes' }),
    download_url: z.string().optional().openapi({ description: 'export.completed' }),
    expires_at: z.string().optional().openapi({ description: 'export.completed' }),
    error: FileError.optional().openapi({ description: 'export.failed: code EXPORT_GENERATION_FAILED' }),
  })
  .openapi('ExportEventData');

const ReportEventData = z
  .object({
    report_id: z.string(),
    name: z.string(),
    format: z.enum(['csv', 'json', 'pdf']),
    status: z.enum(['completed', 'failed']),
    download_url: z.string().optional().openapi({ description: 'report.completed' }),
    expires_at: z.string().optional().openapi({ description: 'report.completed' }),
    error: FileError.optional().openapi({ description: 'report.failed: code REPORT_GENERATION_FAILED' }),
  })
  .openapi('ReportEventData');

const ReplayCompletedEventData = z
  .object({
    replay_id: z.string(),
    status: z.enum(['completed', 'cancelled']),
    matched: z.number().int(),
    started: z.number().int(),
    skipped: z.number().int(),
    failed: z.number().int(),
  })
  .openapi('ReplayCompletedEventData');

const WebhookDisabledEventData = z
  .object({
    webhook_id: z.string().openapi({ description: 'The webhook that was switched off' }),
    name: z.string(),
    url: z.string(),
    reason: z.enum(WEBHOOK_DISABLED_REASONS).openapi({ description: 'gone: it answered 410; persistent_failure: every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS' }),
    disabled_at: Timestamp,
  })
  .openapi('WebhookDisabledEventData');

export const EVENT_DATA_SCHEMAS: Record<EventType, z.ZodType> = {
  'workflow.started': WorkflowEventData,
  'workflow.completed': WorkflowEventData,
  'workflow.failed': WorkflowFailedEventData,
  'message.received': MessageReceivedEventData,
  'message.sent': MessageSentEventData,
  'trigger.activated': TriggerActivatedEventData,
  'customer.created': CustomerEventData,
  'customer.updated': CustomerEventData,
  'export.completed': ExportEventData,
  'export.failed': ExportEventData,
  'report.completed': ReportEventData,
  'report.failed': ReportEventData,
  'replay.completed': ReplayCompletedEventData,
  'webhook.disabled': WebhookDisabledEventData,
  'message.status_updated': MessageStatusUpdatedEventData,
  'conversation.handoff_started': HandoffEventData,
  'conversation.handoff_ended': HandoffEventData,
};

/** What each event type means: the catalog's and the OpenAPI `webhooks` entries' descriptions. */
export const EVENT_DESCRIPTIONS: Record<EventType, string> = {
  'workflow.started': 'An execution of a workflow was created.',
  'workflow.completed': 'An execution finished, with success or failure (`status`).',
  'workflow.failed': 'An execution failed; sent after its workflow.completed.',
  'message.received': 'A customer message was accepted on a channel.',
  'message.sent': 'A message node of a workflow, or a person (an agent message), sent text to a customer.',
  'trigger.activated': 'A trigger fired and started (or resumed) a workflow.',
  'customer.created': 'The first message of a (channel, external id) created a customer.',
  'customer.updated': "A customer's data changed (`changed` lists the fields).",
  'export.completed': 'A data export finished; `download_url` fetches the file until `expires_at`.',
  'export.failed': 'A data export failed.',
  'report.completed': 'A report finished; `download_url` fetches it until `expires_at`.',
  'report.failed': 'A report failed.',
  'replay.completed': 'A replay of executions finished or was cancelled.',
  'webhook.disabled':
    "Delivery switched off another webhook of the organization (410, or every attempt failed for too long); re-activate it with PUT {active: true} (what it missed is not replayed).",
  'message.status_updated':
    'WhatsApp reported a new delivery status of an outbound message (sent, delivered, read or failed); statuses only move forward, each change once.',
  'conversation.handoff_started':
    'A customer was handed to a person (POST /v1/customers/{id}/handoff, or an ai_response node below its confidence threshold with `fallback: "handoff"`): their messages start and resume nothing until it ends.',
  'conversation.handoff_ended': 'A handoff ended: DELETE /v1/customers/{id}/handoff, or its `until` passed. The customer\'s next message starts conversations again.',
};

export interface EventCatalogEntry {
  type: EventType;
  description: string;
  /** JSON Schema (draft 2020-12) of the event's `data`. */
  data_schema: Record<string, unknown>;
}

let catalog: EventCatalogEntry[] | undefined;

/**
 * GET /v1/webhooks/event-types: every event type with its description and the JSON Schema
 * of its `data`, converted from EVENT_DATA_SCHEMAS, the schemas the OpenAPI `webhooks`
 * entries use, so the two cannot drift. Input mode: the schemas say which fields are
 * there, and leave room for fields added later (no `additionalProperties: false`).
 */
export function eventCatalog(): EventCatalogEntry[] {
  return (catalog ??= EVENT_TYPES.map((type) => ({
    type,
    description: EVENT_DESCRIPTIONS[type],
    data_schema: z.toJSONSchema(EVENT_DATA_SCHEMAS[type], { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
  })));
}

const metadata = z
  .object({
    webhook_id: z.string(),
    retry_count: z.number().int().openapi({ description: '0 on the first attempt' }),
    version: z.string().openapi({ example: '1.0' }),
  })
  .openapi('WebhookEventMetadata');

const envelope = (type: EventType) =>
  z.object({
    id: z.string().openapi({ description: 'Event id: the idempotency key, the same on every retry and redelivery', example: 'evt_4eC39HqLyjWDarjtT1zd' }),
    type: z.literal(type),
    timestamp: Timestamp.openapi({ description: 'When the event happened (ISO 8601, UTC)' }),
    data: EVENT_DATA_SCHEMAS[type],
    metadata,
  });

export const WebhookEvent = z
  .union(EVENT_TYPES.map((t) => envelope(t)) as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]])
  .openapi('WebhookEvent');

const HEADERS_DOC = [
  '`Content-Type: application/json`;',
  '`X-Service-Signature`: lowercase hex HMAC-SHA256 of the raw body keyed with the secret\'s UTF-8 bytes;',
  '`X-Service-Event-Id`: the event id; `X-Service-Delivery-Attempt`: 1, 2, ...;',
  'Standard Webhooks `webhook-id` (event id), `webhook-timestamp` (Unix seconds) and',
  '`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` (verify with `new Webhook(secret, { format: "raw" })`).',
  'For WEBHOOK_SECRET_OVERLAP_HOURS after a secret rotation, `webhook-signature` carries two `v1,` signatures (new, previous),',
  '`X-Service-Signature` the new secret\'s and `X-Service-Signature-Previous` the previous secret\'s.',
  'Any 2xx is delivered; 400/401/403/404 and other 4xx are final; 410 is final and disables the webhook (so does every attempt failing for WEBHOOK_DISABLE_AFTER_HOURS);',
  '408, 429 (Retry-After honoured up to 30 s), 5xx, 3xx (never followed), timeouts (10 s) and connection errors are retried.',
].join(' ');

export function registerWebhookEventDocs(registry: OpenAPIRegistry): void {
  registry.register('WebhookEvent', WebhookEvent);
  for (const type of EVENT_TYPES) {
    registry.registerWebhook({
      method: 'post',
      path: type,
      // e.g. workflowCompletedEvent: generators name the payload type after it.
      operationId: `${type.replace(/\.(\w)/g, (_, c: string) => c.toUpperCase())}Event`,
      summary: `${type} event delivered to subscribed webhooks`,
      description: `${EVENT_DESCRIPTIONS[type]} ${HEADERS_DOC}`,
      tags: ['Webhook events'],
      request: { body: { content: { 'application/json': { schema: envelope(type) } }, required: true } },
      responses: { 200: { description: 'Any 2xx acknowledges the delivery' } },
    });
  }
}
