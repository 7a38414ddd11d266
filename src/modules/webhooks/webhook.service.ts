/**
 * Owns the webhook lifecycle and its log: create (URL checked for syntax and forbidden
 * targets, secret generated when absent), list, get, update, delete, test (one real signed
 * delivery, answered synchronously), log listing and redelivery (a new delivery workflow
 * of the same event). Every query is scoped to the caller's organization; another
 * organization's webhook is simply not found.
 */
import { deliveryTimingOf } from '../../config';
import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { HeldClaim } from '../../http/idempotency';
import { flushOrConflict } from '../../db/flush';
import { dateFilter } from '../metrics/execution-metrics';
import { conflict, invalid, notFound, unprocessable } from '../../errors';
import { offsetOf, type Page } from '../../http/pagination';
import { newId, randomBase62 } from '../../ids';
import { openSecret, sealSecret, sealedAt } from '../../secrets';
import type { Services } from '../../services';
import { webhookDeliveryMetadata } from '../../temporal-metadata';
import { type EventType, OutboxEvent } from '../events/event.entity';
import { redeliveryWorkflowId, WEBHOOK_DELIVERY_WORKFLOW_TYPE, newDeliveryStart, type NewDeliveryInput } from '../../../temporal/webhooks.shared';
import { buildEventPayload } from './webhook.delivery';
import { Webhook, WebhookLog, type WebhookLogStatus } from './webhook.entity';
import type { WebhookIn, WebhookUpdate } from './webhook.schemas';
import { classifyAnswer, type WebhookSender } from './webhook.sender';
import { checkUrlSyntax } from './webhook-target';

const webhookNotFound = () => notFound('WEBHOOK_NOT_FOUND', 'Webhook');
const urlTaken = () => conflict('WEBHOOK_ALREADY_EXISTS', 'A webhook with this URL already exists', 'url');

export const generateSecret = () => randomBytes(32).toString('base64url');

export interface WebhookListFilter {
  active?: boolean;
  event_type?: EventType;
}

export interface WebhookLogFilter {
  status?: WebhookLogStatus;
  start_date?: string;
  end_date?: string;
  event_id?: string;
}

export class WebhookService {
  constructor(
    private readonly em: EntityManager,
    private readonly services: Services,
    private readonly sender: () => WebhookSender,
  ) {}

  async list(organizationId: string, filter: WebhookListFilter, page: Page) {
    const where: Record<string, unknown> = { organizationId };
    if (filter.active !== undefined) where.active = filter.active;
    if (filter.event_type) where.events = { $contains: [filter.event_type] };
    const [items, total] = await this.em.findAndCount(Webhook, where, {
      orderBy: { createdAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
    });
    return { items, total };
  }

  async get(organizationId: string, id: string): Promise<Webhook> {
    const hook = await this.em.findOne(Webhook, { id, organizationId });
    if (!hook) throw webhookNotFound();
    return hook;
  }

  async create(organizationId: string, input: WebhookIn): Promise<Webhook> {
    const checked = checkUrlSyntax(input.url, this.services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS);
    if (!('url' in checked)) throw invalid(checked.message, 'url', 'INVALID_WEBHOOK_URL');
    const url = checked.url.href;
    const id = newId('webhook');
    const hook = this.em.create(Webhook, {
      id,
      organizationId,
      name: input.name ?? checked.url.hostname,
      url,
      events: input.events,
      secret: sealSecret(this.services.config, input.secret ?? generateSecret(), sealedAt.webhookSecret(id)),
      active: input.active,
      maxRetries: input.retry_policy?.max_retries ?? 3,
      retryDelayMs: input.retry_policy?.retry_delay_ms ?? 1000,
      rateLimit: input.rate_limit ?? null,
    });
    await flushOrConflict(this.em, urlTaken);
    return hook;
  }

  async update(organizationId: string, id: string, input: WebhookUpdate): Promise<Webhook> {
    const hook = await this.get(organizationId, id);
    if (input.name !== undefined) hook.name = input.name;
    if (input.events !== undefined) hook.events = input.events;
    if (input.retry_policy !== undefined) {
      hook.maxRetries = input.retry_policy.max_retries;
      hook.retryDelayMs = input.retry_policy.retry_delay_ms;
    }
    // Deliveries read it at each attempt: a change applies to those in flight too.
    if (input.rate_limit !== undefined) hook.rateLimit = input.rate_limit;
    if (input.active !== undefined && input.active !== hook.active) {
      hook.active = input.active;
      hook.disabledReason = null;
      hook.disabledAt = null;
      // Failures before the re-activation must not disable it again at its first failure.
      if (input.active) hook.failuresCountedFrom = new Date();
    }
    hook.updatedAt = new Date();
    await this.em.flush();
    return hook;
  }

  /**
   * A new signing secret (given or generated). The replaced one keeps signing beside it for
   * WEBHOOK_SECRET_OVERLAP_HOURS, so deliveries in flight and receivers not yet updated still
   * verify; a second rotation within the overlap drops the older secret at once.
   */
  async rotateSecret(organizationId: string, id: string, secret: string | undefined): Promise<Webhook> {
    const hook = await this.get(organizationId, id);
    const overlapMs = this.services.config.WEBHOOK_SECRET_OVERLAP_HOURS * 3_600_000;
    // Sealed values are bound to their column: the replaced secret is sealed anew for `previous_secret`.
    const config = this.services.config;
    hook.previousSecret = overlapMs > 0 ? sealSecret(config, openSecret(config, hook.secret, sealedAt.webhookSecret(hook.id)), sealedAt.webhookPreviousSecret(hook.id)) : null;
    hook.previousSecretExpiresAt = overlapMs > 0 ? new Date(Date.now() + overlapMs) : null;
    hook.secret = sealSecret(config, secret ?? generateSecret(), sealedAt.webhookSecret(hook.id));
    hook.updatedAt = new Date();
    await this.em.flush();
    return hook;
  }

  /** The rotated-out secret while its overlap lasts. */
  private previousSecretOf(hook: Webhook): string | null {
    return hook.previousSecret && hook.previousSecretExpiresAt && hook.previousSecretExpiresAt > new Date() ? hook.previousSecret : null;
  }

  async delete(organizationId: string, id: string): Promise<void> {
    const deleted = await this.em.nativeDelete(Webhook, { id, organizationId });
    if (deleted === 0) throw webhookNotFound();
  }

  /** One real signed delivery of a synthetic event; answered with its outcome, not logged. */
  async test(organizationId: string, id: string, input: { event_type: EventType; test_data: Record<string, unknown> }) {
    const hook = await this.get(organizationId, id);
    const testId = newId('event');
    const testedAt = new Date();
    const body = JSON.stringify(buildEventPayload({ id: testId, type: input.event_type, createdAt: testedAt, data: input.test_data }, hook.id, 0));
    const outcome = await this.sender().send({ webhookId: hook.id, url: hook.url, secret: hook.secret, previousSecret: this.previousSecretOf(hook), body, eventId: testId, attempt: 1 });
    const delivered = outcome.answered && classifyAnswer(outcome.status) === 'delivered';
    return {
      test_id: testId,
      status: delivered ? ('success' as const) : ('failed' as const),
      response_code: outcome.answered ? outcome.status : 0,
      response_time_ms: outcome.durationMs,
      tested_at: testedAt.toISOString(),
      error_message: delivered ? null : outcome.answered ? `HTTP ${outcome.status}` : outcome.error,
    };
  }

  async logs(organizationId: string, id: string, filter: WebhookLogFilter, page: Page) {
    await this.get(organizationId, id);
    const where: Record<string, unknown> = { webhookId: id, organizationId };
    if (filter.status) where.status = filter.status;
    if (filter.event_id) where.eventId = filter.event_id;
    const { from, to } = dateFilter(filter.start_date, filter.end_date);
    if (from || to) where.deliveredAt = { ...(from ? { $gte: from } : {}), ...(to ? { $lt: to } : {}) };
    const [items, total] = await this.em.findAndCount(WebhookLog, where, {
      orderBy: { deliveredAt: 'desc', id: 'desc' },
      limit: page.limit,
      offset: offsetOf(page),
      exclude: ['responseBody'],
    });
    return { items, total };
  }

  /**
   * Starts a new delivery of the log entry's event; its attempts continue the event's count.
   * With an `Idempotency-Key` claim, the delivery's workflow id is recorded in the claim
   * (the recovery point, committed) before the start; a retry whose first try died after
   * that passes it back as `deliveryId` and starts the same id again, which Temporal refuses
   * if the first start happened: one delivery per key either way.
   */
  async redeliver(organizationId: string, id: string, logId: string, opts: { claim?: HeldClaim; deliveryId?: string } = {}) {
    const hook = await this.get(organizationId, id);
    const log = await this.em.findOne(WebhookLog, { id: logId, webhookId: id, organizationId });
    if (!log) throw notFound('WEBHOOK_LOG_NOT_FOUND', 'Webhook log entry');
    if (!hook.active) {
      throw unprocessable('WEBHOOK_VALIDATION_FAILED', 'The webhook is inactive; activate it before redelivering');
    }
    const event = await this.em.findOne(OutboxEvent, { id: log.eventId, organizationId });
    if (!event) throw unprocessable('WEBHOOK_VALIDATION_FAILED', 'The event of this log entry is no longer stored');
    const [row] = await this.em.execute<Array<{ n: number | null }>>(
      'select max(attempt)::int as n from webhook_logs where webhook_id = ? and event_id = ?',
      [hook.id, event.id],
    );
    const input: NewDeliveryInput = {
      eventId: event.id,
      webhookId: hook.id,
      organizationId,
      retryPolicy: { max_retries: hook.maxRetries, retry_delay_ms: hook.retryDelayMs },
      ...deliveryTimingOf(this.services.config),
      previousAttempts: row?.n ?? 0,
    };
    const workflowId = opts.deliveryId ?? redeliveryWorkflowId(event.id, hook.id, randomBase62(10));
    await opts.claim?.recordIn(this.em, { delivery_id: workflowId });
    await this.services.temporal.client.workflow.start(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
      taskQueue: this.services.config.TEMPORAL_TASK_QUEUE,
      workflowId,
      ...newDeliveryStart(input),
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'FAIL',
      ...webhookDeliveryMetadata(this.services.config, { eventId: event.id, eventType: event.type, webhookId: hook.id, organizationId, redelivery: true }),
    }).catch((err: unknown) => {
      // A resumed redelivery whose first try did start it.
      if (!(opts.deliveryId && err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    });
    return { delivery_id: workflowId, webhook_id: hook.id, event_id: event.id, log_id: log.id, status: 'queued' as const };
  }
}
