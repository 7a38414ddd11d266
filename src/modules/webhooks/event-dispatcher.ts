/**
 * Owns event delivery fan-out (runs in the worker process): takes undispatched outbox rows
 * with `for update skip locked` (so several dispatchers share the work), starts one
 * delivery workflow per (event, subscribed active webhook of the same organization) and
 * stamps `dispatched_at` in the same transaction. Events that no webhook subscribes to are
 * stamped first, in one statement of their own (`stampUnsubscribedEvents`); the
 * transaction runs only for a batch that has subscribed events. The workflow id is derived
 * from the event and the webhook and started with REJECT_DUPLICATE / USE_EXISTING, so a dispatcher
 * that crashes after starting workflows but before committing, or a second dispatcher,
 * never causes a second first attempt. Woken by LISTEN/NOTIFY, with polling as the fallback.
 *
 * The NOTIFY is throttled (at most one per 50 ms database-wide, see
 * Migration20261129000200_throttled_event_notify): an insert that skipped it came within
 * 50 ms of one that sent it. So after each wake, and each batch that found events, the
 * dispatcher keeps polling every `TAIL_POLL_MS` for `TAIL_MS` (that one statement while
 * nothing has a subscriber) before it waits for the next NOTIFY or WEBHOOK_DISPATCH_POLL_MS.
 *
 * With tracing on, each delivery starts in a trace of its own (a delivery is asynchronous by
 * design), whose root span links to the span that recorded the event: the conversation's
 * activity or the request (telemetry/trace-context.ts).
 */
import { deliveryTimingOf } from '../../config';
import type { EntityManager } from '@mikro-orm/postgresql';
import { TypedSearchAttributes, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { type Listening, listenTo } from '../../db/listen';
import type { Services } from '../../services';
import { webhookDeliveryMetadata } from '../../temporal-metadata';
import { SearchAttributeKeys } from '../../../temporal/shared';
import { markEventsDispatched, purgeDispatchedEvents, stampUnsubscribedEvents } from '../events/outbox';
import { inLinkedTrace } from '../../telemetry/trace-context';
import { deliveryWorkflowId, WEBHOOK_DELIVERY_WORKFLOW_TYPE, newDeliveryStart, type NewDeliveryInput } from '../../../temporal/webhooks.shared';

const PURGE_INTERVAL_MS = 3_600_000;
/** How long after its last wake or find the dispatcher keeps polling, and how often. */
const TAIL_MS = 1_000;
const TAIL_POLL_MS = 20;

/** Temporal starts in flight at once, by default (the webhooks benchmark starts its baseline the same way). */
export const DISPATCH_START_CONCURRENCY = 32;

export const EVENTS_CHANNEL = 'wfa_events';

interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  trace_context: string | null;
}
interface HookRow {
  id: string;
  organization_id: string;
  events: string[];
  max_retries: number;
  retry_delay_ms: number;
}

export interface DispatcherOptions {
  pollMs?: number;
  batchSize?: number;
  /** Temporal starts in flight at once. */
  startConcurrency?: number;
}

async function mapLimit<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]!);
  });
  await Promise.all(workers);
}

export class EventDispatcher {
  private stopped = true;
  private loopDone: Promise<void> | undefined;
  private listener: Listening | undefined;
  private wakePending = false;
  /** When the last NOTIFY arrived or the last batch found events (ms since the epoch). */
  private lastActivity = 0;
  private wake: (() => void) | undefined;
  /** Past its tail, waiting for a NOTIFY or the regular poll. */
  private idle = false;
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly startConcurrency: number;

  constructor(
    private readonly services: Services,
    opts: DispatcherOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? services.config.WEBHOOK_DISPATCH_POLL_MS;
    this.batchSize = opts.batchSize ?? 200;
    this.startConcurrency = opts.startConcurrency ?? DISPATCH_START_CONCURRENCY;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    // Woken by each insert; on (re)connect, events may have arrived before we listened.
    this.listener = listenTo({ databaseUrl: this.services.config.DATABASE_URL, channel: EVENTS_CHANNEL, logger: this.services.logger }, () => this.notify(), () => this.notify());
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.notify();
    await this.loopDone;
    await this.listener?.stop();
    this.listener = undefined;
  }

  /** Dispatches one batch; returns how many events it stamped. */
  async dispatchOnce(): Promise<number> {
    const { stamped, subscribed } = await stampUnsubscribedEvents(this.services.hotPool, this.batchSize);
    return subscribed === 0 ? stamped : stamped + (await this.deliverSubscribed());
  }

  /** Starts the deliveries of a batch and stamps it, in one transaction; returns how many events it stamped. */
  private async deliverSubscribed(): Promise<number> {
    const em = this.services.orm.em.fork() as EntityManager;
    return await em.transactional(async (tx) => {
      const events: EventRow[] = await tx.execute(
        `select id, organization_id, type, trace_context from events where dispatched_at is null
         order by created_at limit ? for update skip locked`,
        [this.batchSize],
      );
      if (events.length === 0) return 0;
      const orgs = [...new Set(events.map((e) => e.organization_id))];
      const hooks: HookRow[] = await tx.execute(
        `select id, organization_id, events, max_retries, retry_delay_ms from webhooks
         where active and organization_id in (select jsonb_array_elements_text(?::jsonb))`,
        [JSON.stringify(orgs)],
      );
      const starts: Array<{ event: EventRow; hook: HookRow }> = [];
      for (const event of events) {
        for (const hook of hooks) {
          if (hook.organization_id === event.organization_id && hook.events.includes(event.type)) starts.push({ event, hook });
        }
      }
      await mapLimit(starts, this.startConcurrency, ({ event, hook }) => this.startDelivery(event, hook));
      await markEventsDispatched(tx, events.map((e) => e.id));
      return events.length;
    });
  }

  private async startDelivery(event: EventRow, hook: HookRow): Promise<void> {
    const input: NewDeliveryInput = {
      eventId: event.id,
      webhookId: hook.id,
      organizationId: event.organization_id,
      retryPolicy: { max_retries: hook.max_retries, retry_delay_ms: hook.retry_delay_ms },
      ...deliveryTimingOf(this.services.config),
    };
    try {
      await inLinkedTrace(`deliver ${event.type}`, event.trace_context, () => this.services.temporal.client.workflow.start(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
        taskQueue: this.services.config.TEMPORAL_TASK_QUEUE,
        workflowId: deliveryWorkflowId(event.id, hook.id),
        ...newDeliveryStart(input),
        // Never a second delivery workflow for this (event, webhook): not while one runs,
        // not after it closed.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: new TypedSearchAttributes([{ key: SearchAttributeKeys.organizationId, value: event.organization_id }]),
        ...webhookDeliveryMetadata(this.services.config, { eventId: event.id, eventType: event.type, webhookId: hook.id, organizationId: event.organization_id }),
      }));
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return; // an earlier dispatch started it
      throw err;
    }
  }

  /**
   * Whether the loop waits for a NOTIFY or WEBHOOK_DISPATCH_POLL_MS, its tail over: then only
   * those wake it (tests prove the NOTIFY wake-up with it, not with a sleep).
   */
  isIdle(): boolean {
    return this.idle;
  }

  private notify() {
    this.lastActivity = Date.now();
    this.wakePending = true;
    this.wake?.();
  }

  private inTail(): boolean {
    return Date.now() - this.lastActivity < TAIL_MS;
  }

  /** Waits for a NOTIFY or `timeoutMs`, whichever comes first. */
  private async waitForWake(timeoutMs: number): Promise<void> {
    if (this.wakePending || this.stopped) {
      this.wakePending = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
    this.wake = undefined;
    this.wakePending = false;
  }

  /** Deletes dispatched events past EVENT_RETENTION_DAYS; returns how many. */
  async purgeDispatched(): Promise<number> {
    return await purgeDispatchedEvents(this.services.orm.em.fork(), this.services.config.EVENT_RETENTION_DAYS);
  }

  private async loop(): Promise<void> {
    let lastPurge = 0;
    while (!this.stopped) {
      if (Date.now() - lastPurge > PURGE_INTERVAL_MS) {
        lastPurge = Date.now();
        await this.purgeDispatched().catch((err: unknown) => this.services.logger.warn({ err }, 'could not purge old events'));
      }
      let n = 0;
      try {
        n = await this.dispatchOnce();
      } catch (err) {
        this.services.logger.error({ err }, 'event dispatch failed; retrying');
      }
      if (n > 0) this.lastActivity = Date.now();
      const tailPoll = this.inTail();
      this.idle = n < this.batchSize && !tailPoll;
      // A full batch may have left more: go on at once.
      if (n < this.batchSize) await this.waitForWake(tailPoll ? TAIL_POLL_MS : this.pollMs);
      this.idle = false;
    }
  }
}
