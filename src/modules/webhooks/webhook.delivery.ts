/**
 * Owns one delivery attempt end to end, independent of Temporal: load the webhook and the
 * event, build the payload with `retry_count`, send it, write the attempt's log row at
 * once (so it is visible as soon as the attempt ends), disable the webhook on a 410 or after persistent failure,
 * and say whether the attempt was delivered, should be retried, or is final.
 */
import { type HotPool, hotQuery } from '../../db/hot-query';
import { newId } from '../../ids';
import { insertEventsSql } from '../events/outbox';
import { classifyAnswer, MAX_RESPONSE_BODY_BYTES, type WebhookSender } from './webhook.sender';
import type { WebhookThrottle } from './webhook-throttle';

/** `metadata.version`: the payload format. */
export const EVENT_PAYLOAD_VERSION = '1.0';

export interface EventPayload {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
  metadata: { webhook_id: string; retry_count: number; version: string };
}

export function buildEventPayload(
  event: { id: string; type: string; createdAt: Date; data: Record<string, unknown> },
  webhookId: string,
  retryCount: number,
): EventPayload {
  return {
    id: event.id,
    type: event.type,
    timestamp: event.createdAt.toISOString(),
    data: event.data,
    metadata: { webhook_id: webhookId, retry_count: retryCount, version: EVENT_PAYLOAD_VERSION },
  };
}

export type AttemptResult =
  | { kind: 'skipped'; reason: string }
  /** The webhook's rate_limit has no room yet: nothing was sent nor logged; ask again in `waitMs` holding the turn. */
  | { kind: 'throttled'; waitMs: number }
  | { kind: 'delivered'; attempt: number; responseCode: number }
  | { kind: 'retry'; attempt: number; message: string; retryAfterMs: number | undefined }
  | { kind: 'final'; attempt: number; message: string };

interface AttemptRow {
  webhook_id: string;
  organization_id: string;
  url: string;
  secret: string;
  /** The rotated-out secret while its overlap lasts, else null. */
  previous_secret: string | null;
  active: boolean;
  rate_limit: number | null;
  event_id: string | null;
  event_type: string | null;
  /** timestamptz as the ORM's pool returns it: PostgreSQL's text form. */
  event_created_at: string | null;
  event_data: Record<string, unknown> | null;
}

/**
 * The webhook and the event of one attempt in one round trip (the event outer-joined, so a
 * missing event and a missing webhook stay distinguishable). Named: prepared once per
 * pooled connection.
 */
const LOAD_ATTEMPT = {
  name: 'webhook_attempt_load',
  text: `select w.id as webhook_id, w.organization_id, w.url, w.secret, w.active, w.rate_limit,
                case when w.previous_secret_expires_at > now() then w.previous_secret end as previous_secret,
                e.id as event_id, e.type as event_type, e.created_at as event_created_at, e.data as event_data
           from webhooks w left join events e on e.id = $2 and e.organization_id = $3
          where w.id = $1 and w.organization_id = $3`,
};

const LOG_COLUMNS = `id, webhook_id, organization_id, event_id, event_type, status, response_code, response_time_ms, attempt, delivered_at, error_message, response_body`;
// delivered_at from our clock at millisecond precision, as the ORM wrote it: the logs list
// pages by (delivered_at, id) with cursors that carry milliseconds.
const LOG_VALUES = `$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12`;

/** The attempt's log row: one autocommitted statement. */
const INSERT_LOG = { name: 'webhook_attempt_log', text: `insert into webhook_logs (${LOG_COLUMNS}) values (${LOG_VALUES})` };

/**
 * The `webhook.disabled` outbox row of the webhooks a CTE named `disabled` switched off
 * (the dispatcher sends it to the organization's other webhooks that subscribe to it).
 */
const disabledEvent = (eventIdParam: string) =>
  insertEventsSql(`
  select ${eventIdParam}, organization_id, 'webhook.disabled',
         jsonb_build_object('webhook_id', id, 'name', name, 'url', url, 'reason', disabled_reason,
                            'disabled_at', to_char(disabled_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
         disabled_at
    from disabled`);

/**
 * A 410: the log row, the deactivation (`gone`) and its `webhook.disabled` event in one
 * statement, so all commit or none. A webhook already inactive (a concurrent attempt
 * disabled it) is not disabled twice.
 */
const INSERT_LOG_AND_DISABLE_GONE = {
  name: 'webhook_attempt_log_gone',
  text: `with disabled as (
           update webhooks set active = false, disabled_reason = 'gone', disabled_at = now(), updated_at = now()
            where id = $2 and active
           returning id, organization_id, name, url, disabled_reason, disabled_at
         ), disabled_event as (${disabledEvent('$13')})
         insert into webhook_logs (${LOG_COLUMNS}) values (${LOG_VALUES})`,
};

/**
 * After a failed attempt (its log row committed): disable the webhook when every attempt
 * since its last success (or its re-activation) failed, the last of them (the one just
 * logged) at least $2 seconds after the first, and there are at least $3 of them; with its
 * `webhook.disabled` event. The span is read from the attempts' own `delivered_at`, all
 * stamped by the workers' clock, not against the database's now(): two clocks made the
 * rule's "$2 seconds" and the logs' visible spread differ by the statements between them.
 * Only failures run it, so deliveries that succeed pay nothing. `and active` in the update
 * makes concurrent failing attempts disable it once: the later one re-checks the row after
 * the first commits and finds it inactive.
 */
const DISABLE_IF_PERSISTENTLY_FAILING = {
  name: 'webhook_disable_persistent_failure',
  text: `with counted as (
           select greatest(
                    coalesce((select max(delivered_at) from webhook_logs where webhook_id = $1 and status = 'success'), '-infinity'),
                    coalesce((select failures_counted_from from webhooks where id = $1), '-infinity')) as after
         ), streak as (
           select count(*) as attempts, min(delivered_at) as since, max(delivered_at) as until
             from webhook_logs, counted where webhook_id = $1 and delivered_at > counted.after
         ), disabled as (
           update webhooks w set active = false, disabled_reason = 'persistent_failure', disabled_at = now(), updated_at = now()
             from streak
            where w.id = $1 and w.active and streak.attempts >= $3 and streak.until - streak.since >= make_interval(secs => $2)
           returning w.id, w.organization_id, w.name, w.url, w.disabled_reason, w.disabled_at
         )
         ${disabledEvent('$4')}
         returning id`,
};

/**
 * A wait this short is spent in the attempt itself (holding its turn) instead of a workflow
 * timer: a timer and the next activity cost more than that in Temporal round trips, and
 * holding a worker slot for at most this long is cheap.
 */
export const INLINE_THROTTLE_WAIT_MS = 250;

/** 0 when the attempt may send now; else the wait for the workflow's timer. */
async function waitForTurn(throttle: WebhookThrottle, webhookId: string, rate: number, holdsTurn: boolean): Promise<number> {
  let waitMs = await throttle.acquire(webhookId, rate, holdsTurn);
  // Bounded: each pass either sends or waits at most INLINE_THROTTLE_WAIT_MS again.
  for (let pass = 0; waitMs > 0 && waitMs <= INLINE_THROTTLE_WAIT_MS && pass < 8; pass++) {
    await new Promise((r) => setTimeout(r, waitMs));
    waitMs = await throttle.acquire(webhookId, rate, true);
  }
  return waitMs;
}

/** When delivery disables a webhook whose attempts keep failing (WEBHOOK_DISABLE_AFTER_HOURS, WEBHOOK_DISABLE_MIN_ATTEMPTS). */
export interface DisablePolicy {
  afterMs: number;
  minAttempts: number;
}

/**
 * One attempt. The reads and the log write are plain statements on the hot pool
 * (`hotQuery`), not entity loads and a unit-of-work flush: with deliveries running dozens at
 * once, the ORM's query building, hydration and change sets were a fifth of the worker's
 * main-thread CPU per delivery (docs/performance.md, Webhooks).
 */
export async function performDeliveryAttempt(
  pool: HotPool,
  sender: WebhookSender,
  input: { eventId: string; webhookId: string; organizationId: string; attempt: number; holdsTurn?: boolean },
  disablePolicy?: DisablePolicy,
  throttle?: WebhookThrottle,
): Promise<AttemptResult> {
  const [row] = await hotQuery<AttemptRow>(pool, LOAD_ATTEMPT, [input.webhookId, input.eventId, input.organizationId]);
  if (!row) return { kind: 'skipped', reason: 'webhook deleted' };
  if (!row.active) return { kind: 'skipped', reason: 'webhook inactive' };
  if (row.event_id === null) return { kind: 'skipped', reason: 'event not found' };
  // Only a throttled webhook asks Redis: the unthrottled path costs one more column.
  if (row.rate_limit !== null && throttle) {
    const waitMs = await waitForTurn(throttle, row.webhook_id, row.rate_limit, input.holdsTurn ?? false);
    if (waitMs > 0) return { kind: 'throttled', waitMs };
  }
  const event = { id: row.event_id, type: row.event_type!, createdAt: new Date(row.event_created_at!), data: row.event_data! };

  const { attempt } = input;
  const body = JSON.stringify(buildEventPayload(event, row.webhook_id, attempt - 1));
  const outcome = await sender.send({ webhookId: row.webhook_id, url: row.url, secret: row.secret, previousSecret: row.previous_secret, body, eventId: event.id, attempt });

  let result: AttemptResult;
  let responseCode = 0;
  let errorMessage: string | null = null;
  let responseBody: string | null = null;
  if (outcome.answered) {
    responseCode = outcome.status;
    responseBody = outcome.body.slice(0, MAX_RESPONSE_BODY_BYTES);
    const cls = classifyAnswer(outcome.status);
    if (cls === 'delivered') result = { kind: 'delivered', attempt, responseCode };
    else {
      errorMessage = `HTTP ${outcome.status}${cls === 'gone' ? ': endpoint gone, webhook deactivated' : ''}`;
      result =
        cls === 'retry'
          ? { kind: 'retry', attempt, message: errorMessage, retryAfterMs: outcome.status === 429 ? outcome.retryAfterMs : undefined }
          : { kind: 'final', attempt, message: errorMessage };
    }
  } else {
    errorMessage = outcome.error;
    result =
      outcome.reason === 'forbidden'
        ? { kind: 'final', attempt, message: errorMessage }
        : { kind: 'retry', attempt, message: errorMessage, retryAfterMs: undefined };
  }

  const gone = outcome.answered && classifyAnswer(outcome.status) === 'gone';
  const logParams = [
    newId('webhookLog'),
    row.webhook_id,
    row.organization_id,
    event.id,
    event.type,
    result.kind === 'delivered' ? 'success' : 'failed',
    responseCode,
    outcome.durationMs,
    attempt,
    new Date().toISOString(),
    errorMessage,
    responseBody,
  ];
  if (gone) await hotQuery(pool, INSERT_LOG_AND_DISABLE_GONE, [...logParams, newId('event')]);
  else await hotQuery(pool, INSERT_LOG, logParams);
  if (result.kind !== 'delivered' && !gone && disablePolicy) {
    const disabled = await hotQuery(pool, DISABLE_IF_PERSISTENTLY_FAILING, [row.webhook_id, disablePolicy.afterMs / 1000, disablePolicy.minAttempts, newId('event')]);
    // The attempt that disabled the webhook ends its delivery: left to retry, a re-activation
    // during the backoff would have the old event delivered after all ("nothing missed is
    // replayed", docs/webhooks.md#disabling).
    if (disabled.length > 0) return { kind: 'final', attempt, message: `${errorMessage ?? 'failed'}; webhook disabled (persistent_failure)` };
  }
  return result;
}
