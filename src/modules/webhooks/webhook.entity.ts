/**
 * A webhook (an organization's HTTPS endpoint subscribed to event types, with its signing
 * secret and retry policy) and its delivery log: one row per attempt, written by the
 * delivery activity the moment the attempt ends.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';
import type { EventType } from '../events/event.entity';

export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_RETRY_DELAY_MS = 1000;

/** `gone`: the endpoint answered 410; `persistent_failure`: WEBHOOK_DISABLE_AFTER_HOURS of failed attempts only. */
export const WEBHOOK_DISABLED_REASONS = ['gone', 'persistent_failure'] as const;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];

export class Webhook {
  [OptionalProps]?: 'active' | 'maxRetries' | 'retryDelayMs' | 'createdAt' | 'updatedAt' | 'disabledReason' | 'disabledAt' | 'failuresCountedFrom' | 'previousSecret' | 'previousSecretExpiresAt' | 'rateLimit';
  id!: string;
  organizationId!: string;
  name!: string;
  url!: string;
  events!: EventType[];
  secret!: string;
  active = true;
  maxRetries: number = DEFAULT_MAX_RETRIES;
  retryDelayMs: number = DEFAULT_RETRY_DELAY_MS;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
  /** Why delivery switched the webhook off; null when active or when a client did. */
  disabledReason: WebhookDisabledReason | null = null;
  disabledAt: Date | null = null;
  /** Set when a client re-activates the webhook: failures before it no longer count towards disabling. */
  failuresCountedFrom: Date | null = null;
  /** The secret the last rotation replaced: it signs beside `secret` until `previousSecretExpiresAt`. */
  previousSecret: string | null = null;
  previousSecretExpiresAt: Date | null = null;
  /** Deliveries per second at most, retries included, across all workers; null: unthrottled. */
  rateLimit: number | null = null;
}

export const WebhookSchema = new EntitySchema<Webhook>({
  class: Webhook,
  tableName: 'webhooks',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    name: { type: 'string' },
    url: { type: 'text' },
    events: { type: 'string[]', columnType: 'text[]' },
    secret: { type: 'string' },
    active: { type: 'boolean' },
    maxRetries: { type: 'integer', fieldName: 'max_retries' },
    retryDelayMs: { type: 'integer', fieldName: 'retry_delay_ms' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
    disabledReason: { type: 'string', fieldName: 'disabled_reason', nullable: true },
    disabledAt: { type: 'Date', fieldName: 'disabled_at', nullable: true },
    failuresCountedFrom: { type: 'Date', fieldName: 'failures_counted_from', nullable: true },
    previousSecret: { type: 'text', fieldName: 'previous_secret', nullable: true },
    previousSecretExpiresAt: { type: 'Date', fieldName: 'previous_secret_expires_at', nullable: true },
    rateLimit: { type: 'integer', fieldName: 'rate_limit', nullable: true },
  },
});

export const WEBHOOK_LOG_STATUSES = ['success', 'failed'] as const;
export type WebhookLogStatus = (typeof WEBHOOK_LOG_STATUSES)[number];

export class WebhookLog {
  [OptionalProps]?: 'deliveredAt' | 'errorMessage' | 'responseBody';
  id!: string;
  webhookId!: string;
  organizationId!: string;
  eventId!: string;
  eventType!: string;
  status!: WebhookLogStatus;
  /** 0 when there was no HTTP answer (timeout, refused connection, forbidden address). */
  responseCode!: number;
  responseTimeMs!: number;
  /** From 1; a redelivery continues the numbering of its event's earlier attempts. */
  attempt!: number;
  deliveredAt: Date = new Date();
  errorMessage: string | null = null;
  /** At most 20 KB of what the receiver answered, for operators; not part of the API. */
  responseBody: string | null = null;
}

export const WebhookLogSchema = new EntitySchema<WebhookLog>({
  class: WebhookLog,
  tableName: 'webhook_logs',
  properties: {
    id: { type: 'string', primary: true },
    webhookId: { type: 'string', fieldName: 'webhook_id' },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    eventId: { type: 'string', fieldName: 'event_id' },
    eventType: { type: 'string', fieldName: 'event_type' },
    status: { type: 'string' },
    responseCode: { type: 'integer', fieldName: 'response_code' },
    responseTimeMs: { type: 'integer', fieldName: 'response_time_ms' },
    attempt: { type: 'integer' },
    deliveredAt: { type: 'Date', fieldName: 'delivered_at' },
    errorMessage: { type: 'text', fieldName: 'error_message', nullable: true },
    responseBody: { type: 'text', fieldName: 'response_body', nullable: true },
  },
});
