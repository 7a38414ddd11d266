/**
 * Owns the service's operational Prometheus metrics beyond HTTP (which services.ts
 * defines): conversations (executions) started and finished, channel and webhook delivery
 * failures, the webhook backlog, and the reconciler's catch-ups. Each is registered once per
 * registry (the one /metrics serves) and every known label value starts at 0, so a series
 * exists before its first event and the dashboard (deploy/grafana) and alerts
 * (deploy/prometheus) never read an absent series as "no problem".
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The tables of the durably started kinds (starts/durable-start.ts `StartKind.table`). */
const START_KINDS = ['executions', 'exports', 'reports', 'replays', 'dry_runs', 'webhook_recoveries', 'messages', 'debounce_bursts'] as const;
const FINISH_STATUSES = ['success', 'failed', 'cancelled'] as const;
const WEBHOOK_OUTCOMES = ['delivered', 'retry', 'final', 'throttled', 'skipped'] as const;
const CHANNEL_FAILURES = ['rejected', 'provider_error'] as const;
const CATCH_UP_KINDS = ['executions', 'replies', 'cancels', 'jobs'] as const;

export interface ServiceMetrics {
  /** Temporal starts confirmed by this process, by kind (`executions`: conversations). */
  starts: Counter<'kind'>;
  /** Conversations this worker finished, by final status. */
  executionsFinished: Counter<'status'>;
  /** Channel (WhatsApp, SMS, ...) sends that failed: refused by the provider, or the provider unreachable / erroring. */
  channelDeliveryFailures: Counter<'reason'>;
  /** Webhook delivery attempts by outcome (`retry` and `final` are failures). */
  webhookAttempts: Counter<'outcome'>;
  /** Work the reconciler had to catch up on (starts, replies, cancels never confirmed by the first attempt). */
  reconcilerCatchUps: Counter<'kind'>;
}

function zeroed<L extends string>(counter: Counter<L>, label: L, values: readonly string[]): Counter<L> {
  for (const v of values) counter.inc({ [label]: v } as Partial<Record<L, string>>, 0);
  return counter;
}

const perRegistry = new WeakMap<Registry, ServiceMetrics>();

export function serviceMetricsFor(registry: Registry): ServiceMetrics {
  let m = perRegistry.get(registry);
  if (m) return m;
  const registers = [registry];
  m = {
    starts: zeroed(
      new Counter({ name: 'workflow_starts_total', help: 'Temporal workflow starts confirmed by this process, by kind (executions: conversations)', labelNames: ['kind'], registers }),
      'kind',
      START_KINDS,
    ),
    executionsFinished: zeroed(
      new Counter({ name: 'executions_finished_total', help: 'Conversations (executions) finished by this worker, by final status', labelNames: ['status'], registers }),
      'status',
      FINISH_STATUSES,
    ),
    channelDeliveryFailures: zeroed(
      new Counter({
        name: 'channel_delivery_failures_total',
        help: 'Channel message sends that failed: rejected by the provider, or a provider error (retried)',
        labelNames: ['reason'],
        registers,
      }),
      'reason',
      CHANNEL_FAILURES,
    ),
    webhookAttempts: zeroed(
      new Counter({ name: 'webhook_delivery_attempts_total', help: 'Webhook delivery attempts by outcome (retry and final are failures)', labelNames: ['outcome'], registers }),
      'outcome',
      WEBHOOK_OUTCOMES,
    ),
    reconcilerCatchUps: zeroed(
      new Counter({
        name: 'reconciler_catch_ups_total',
        help: 'Starts, replies and cancels the reconciler completed because their first attempt was never confirmed',
        labelNames: ['kind'],
        registers,
      }),
      'kind',
      CATCH_UP_KINDS,
    ),
  };
  perRegistry.set(registry, m);
  return m;
}

/**
 * The outbox events not yet fanned out to webhooks, and the age of the oldest: read from
 * PostgreSQL at each scrape (the partial index events_undispatched_idx keeps it cheap).
 * Every worker reports the same database-wide value: aggregate with max(), not sum().
 */
export function registerWebhookBacklog(registry: Registry, query: () => Promise<{ count: number; oldestSeconds: number }>): void {
  if (registry.getSingleMetric('webhook_backlog_events')) return;
  let pending: Promise<{ count: number; oldestSeconds: number }> | undefined;
  // Both gauges share one query per scrape.
  const read = () => (pending ??= query().finally(() => setImmediate(() => (pending = undefined))));
  new Gauge({
    name: 'webhook_backlog_events',
    help: 'Outbox events waiting to be dispatched to webhooks (database-wide)',
    registers: [registry],
    async collect() {
      // A failed read (PostgreSQL away) keeps the last value: /metrics must still answer.
      const r = await read().catch(() => undefined);
      if (r) this.set(r.count);
    },
  });
  new Gauge({
    name: 'webhook_backlog_oldest_seconds',
    help: 'Age of the oldest outbox event waiting to be dispatched to webhooks, 0 when none (database-wide)',
    registers: [registry],
    async collect() {
      const r = await read().catch(() => undefined);
      if (r) this.set(r.oldestSeconds);
    },
  });
}
