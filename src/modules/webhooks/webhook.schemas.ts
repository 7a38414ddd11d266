/**
 * Owns the webhook's In / Update / Out shapes and which error code each field's problem
 * gets: url → 400 INVALID_WEBHOOK_URL, events / event_type → 400 INVALID_EVENT_TYPES,
 * retry_policy → 400 INVALID_RETRY_POLICY (bounds from DESIGN: 0–10 retries, 100–30000 ms).
 * Field visibility: create answers `secret` without `retry_policy`; list items carry
 * neither; get and update carry both.
 */
import { paginationQuery } from '../../http/pagination';
import { isoDateTime, queryBoolean, type IssueClassifier } from '../../http/validation';
import { Timestamp } from '../../http/openapi';
import { z } from '../../http/zod';
import { TemporalUiUrlOut } from '../../temporal-ui';
import { EVENT_TYPES } from '../events/event.entity';
import { DEFAULT_MAX_RETRIES, DEFAULT_RETRY_DELAY_MS, WEBHOOK_DISABLED_REASONS, WEBHOOK_LOG_STATUSES } from './webhook.entity';

export const EventTypeEnum = z.enum(EVENT_TYPES).openapi('EventType');

export const URL_MAX = 2048;
export const SECRET_MIN = 16;
export const SECRET_MAX = 256;

const name = z.string().trim().min(1, 'name must not be empty').max(200);
const events = z
  .array(EventTypeEnum)
  .min(1, 'events must name at least one event type')
  .max(EVENT_TYPES.length * 4)
  .transform((list) => [...new Set(list)])
  .openapi({ description: 'Event types to deliver', example: ['workflow.completed', 'workflow.failed'] });

export const RetryPolicy = z
  .strictObject({
    max_retries: z.number().int().min(0).max(10).default(DEFAULT_MAX_RETRIES),
    retry_delay_ms: z.number().int().min(100).max(30_000).default(DEFAULT_RETRY_DELAY_MS),
  })
  .openapi('WebhookRetryPolicy', {
    description: 'Retries after the first attempt; the delay before retry n is min(retry_delay_ms × 2^(n−1), 30000) ms',
  });

export const RATE_LIMIT_MAX = 1000;
const rateLimit = z
  .number()
  .int()
  .min(1)
  .max(RATE_LIMIT_MAX)
  .nullable()
  .openapi({
    description:
      'Extension: deliveries per second to this endpoint at most, retries included, across all workers; attempts beyond it wait their turn. null: unthrottled',
    example: 5,
  });

const secret = z
  .string()
  .min(SECRET_MIN)
  .max(SECRET_MAX)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
  .optional()
  .openapi({ description: 'Signing secret; 32 random bytes (base64url) are generated when omitted' });

export const WebhookIn = z
  .strictObject({
    name: name.optional().openapi({ description: 'Defaults to the URL host' }),
    url: z.string().max(URL_MAX).openapi({ example: 'https://example.com/hooks/wfa' }),
    events,
    secret,
    active: z.boolean().default(true),
    retry_policy: RetryPolicy.optional(),
    rate_limit: rateLimit.optional(),
  })
  .openapi('WebhookCreate');
export type WebhookIn = z.output<typeof WebhookIn>;

export const WebhookUpdate = z
  .strictObject({
    name: name.optional(),
    events: events.optional(),
    retry_policy: RetryPolicy.optional(),
    rate_limit: rateLimit.optional(),
    active: z.boolean().optional().openapi({ description: 'Extension: re-enable a webhook (e.g. after a 410 switched it off)' }),
  })
  .openapi('WebhookUpdate');
export type WebhookUpdate = z.output<typeof WebhookUpdate>;

const webhookBase = {
  id: z.string().openapi({ example: 'wh_4eC39HqLyjWDarjtT1zd' }),
  name: z.string(),
  url: z.string(),
  events: z.array(EventTypeEnum),
  active: z.boolean(),
  disabled_reason: z.enum(WEBHOOK_DISABLED_REASONS).nullable().openapi({
    description: 'Extension: why delivery switched the webhook off (gone: a 410; persistent_failure); null when active or switched off by a client',
  }),
  disabled_at: Timestamp.nullable().openapi({ description: 'Extension: when delivery switched it off' }),
  rate_limit: rateLimit,
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const WebhookListItemOut = z.object(webhookBase).openapi('WebhookListItem');
export const WebhookCreatedOut = z.object({ ...webhookBase, secret: z.string() }).openapi('WebhookCreated');
export const WebhookOut = z
  .object({
    ...webhookBase,
    secret: z.string(),
    retry_policy: z.object({ max_retries: z.number().int(), retry_delay_ms: z.number().int() }),
  })
  .openapi('Webhook');

export const RotateSecretIn = z.strictObject({ secret }).openapi('WebhookRotateSecret');

export const RotateSecretOut = z
  .object({
    webhook_id: z.string(),
    secret: z.string().openapi({ description: 'The new signing secret' }),
    previous_secret_expires_at: Timestamp.nullable().openapi({
      description: 'Until then every delivery is signed with the new and the previous secret; null when WEBHOOK_SECRET_OVERLAP_HOURS is 0',
    }),
  })
  .openapi('WebhookSecretRotation');

export const EventCatalogOut = z
  .object({
    type: EventTypeEnum,
    description: z.string(),
    data_schema: z.record(z.string(), z.unknown()).openapi({ description: 'JSON Schema (draft 2020-12) of the event `data`' }),
  })
  .openapi('WebhookEventType');

export const WebhookListQuery = z.strictObject({
  ...paginationQuery,
  active: queryBoolean.optional(),
  event_type: EventTypeEnum.optional(),
});

export const WebhookIdParams = z.object({ webhook_id: z.string().max(64) });
export const WebhookLogParams = z.object({ webhook_id: z.string().max(64), log_id: z.string().max(64) });

export const WebhookTestIn = z
  .strictObject({
    event_type: EventTypeEnum,
    test_data: z.record(z.string(), z.unknown()).default({}).openapi({ description: 'Sent as the event `data`' }),
  })
  .openapi('WebhookTest');

export const WebhookTestOut = z
  .object({
    test_id: z.string(),
    status: z.enum(WEBHOOK_LOG_STATUSES),
    response_code: z.number().int().openapi({ description: '0 when there was no HTTP answer' }),
    response_time_ms: z.number().int(),
    tested_at: Timestamp,
    error_message: z.string().nullable(),
  })
  .openapi('WebhookTestResult');

export const WebhookLogQuery = z.strictObject({
  ...paginationQuery,
  status: z.enum(WEBHOOK_LOG_STATUSES).optional(),
  start_date: isoDateTime.optional().openapi({ description: 'Inclusive, on `delivered_at`' }),
  end_date: isoDateTime.optional().openapi({ description: 'Exclusive timestamp on `delivered_at`; a date-only value includes that whole UTC day' }),
  event_id: z.string().max(64).optional().openapi({ description: 'Extension: the attempts of one event' }),
});

export const WebhookLogOut = z
  .object({
    id: z.string(),
    webhook_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    status: z.enum(WEBHOOK_LOG_STATUSES),
    response_code: z.number().int().openapi({ description: '0 when there was no HTTP answer' }),
    response_time_ms: z.number().int(),
    attempt: z.number().int().openapi({ description: 'From 1; redeliveries continue the count' }),
    delivered_at: Timestamp,
    error_message: z.string().nullable(),
  })
  .openapi('WebhookLog');

export const RedeliveryOut = z
  .object({
    delivery_id: z.string().openapi({ description: 'The Temporal workflow id of the new delivery' }),
    webhook_id: z.string(),
    event_id: z.string(),
    log_id: z.string(),
    status: z.literal('queued'),
  })
  .openapi('WebhookRedelivery');

export const RECOVERY_STATUSES = ['running', 'completed'] as const;

export const RecoverIn = z
  .strictObject({
    since: isoDateTime.openapi({ description: 'Events created at or after (ISO 8601); within EVENT_RETENTION_DAYS (default 30)' }),
    until: isoDateTime.optional().openapi({ description: 'Events created before; default now, never in the future' }),
    status: z.literal('failed').optional().openapi({
      description: 'Only events whose last attempt to this webhook failed, or that were never attempted (sent while it was disabled). Omitted: every event',
    }),
  })
  .openapi('WebhookRecover');

export const WebhookRecoveryParams = z.object({ webhook_id: z.string().max(64), recovery_id: z.string().max(64) });

export const RecoveryOut = z
  .object({
    id: z.string().openapi({ example: 'whr_4eC39HqLyjWDarjtT1zd' }),
    webhook_id: z.string(),
    temporal_ui_url: TemporalUiUrlOut,
    status: z.enum(RECOVERY_STATUSES).openapi({ description: 'running until every matched event has its delivery started or is skipped' }),
    window: z.object({ since: Timestamp, until: Timestamp, status: z.literal('failed').nullable() }),
    matched: z.number().int().openapi({ description: 'Events of the window (and status) when the recovery was created' }),
    started: z.number().int().openapi({ description: 'Deliveries this recovery started' }),
    skipped: z.number().int().openapi({ description: 'Events another recovery is delivering or has delivered (or purged since)' }),
    pending: z.number().int().openapi({ description: 'Events not yet reached' }),
    delivered: z.number().int().openapi({ description: 'Started deliveries that succeeded' }),
    failed: z.number().int().openapi({ description: 'Started deliveries whose attempts so far failed (their retries may still follow)' }),
    created_at: Timestamp,
    completed_at: Timestamp.nullable(),
  })
  .openapi('WebhookRecovery');

export const classifyWebhookIssue: IssueClassifier = ({ path, issue }) => {
  // An unknown top-level field (e.g. `url` on update) is a plain INVALID_REQUEST.
  if (issue.code === 'unrecognized_keys' && path.length === 1) return undefined;
  switch (path[0]) {
    case 'url':
      return { status: 400, code: 'INVALID_WEBHOOK_URL' };
    case 'events':
    case 'event_type':
      return { status: 400, code: 'INVALID_EVENT_TYPES' };
    case 'retry_policy':
      return { status: 400, code: 'INVALID_RETRY_POLICY' };
    default:
      return undefined;
  }
};
