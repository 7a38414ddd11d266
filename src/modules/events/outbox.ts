/**
 * Owns the `events` table (the outbox). `recordEvent` is how a module emits an event in an
 * ORM unit of work: it persists an outbox row in the caller's EntityManager, so the event
 * commits (or rolls back) with the change that caused it. A module that writes in one SQL
 * statement of its own composes `insertEventsSql` into it instead (same atomicity, one round
 * trip). The dispatcher's bookkeeping (`stampUnsubscribedEvents`, `markEventsDispatched`,
 * `purgeDispatchedEvents`) is here too, so every write of the table lives in this module.
 *
 * Each event keeps the `traceparent` of the span that recorded it (null while tracing is
 * off): `recordEvent` and the JSON rows take it themselves; a statement that inserts with a
 * select of its own passes `TRACED_EVENT_COLUMNS` and binds `activeTraceparent()`.
 */
import type { EntityManager } from '@mikro-orm/core';
import { type HotPool, hotQuery, type SqlRunner } from '../../db/hot-query';
import { newId } from '../../ids';
import { activeTraceparent } from '../../telemetry/trace-context';
import { type EventType, OutboxEvent } from './event.entity';

export interface EventInput {
  organizationId: string;
  type: EventType;
  data: Record<string, unknown>;
  /** When the described thing happened; defaults to now. */
  occurredAt?: Date;
}

/** The outbox row of an event, for a caller that writes it inside a statement of its own (one round trip). */
export function outboxEventRow(input: EventInput): Pick<OutboxEvent, 'id' | 'organizationId' | 'type' | 'data' | 'createdAt' | 'traceContext'> {
  return {
    id: newId('event'),
    organizationId: input.organizationId,
    type: input.type,
    data: input.data,
    createdAt: input.occurredAt ?? new Date(),
    traceContext: activeTraceparent(),
  };
}

/** `outboxEventRow` with the table's column names, for a JSON parameter read by `jsonb_populate_record(set)(null::events, ...)`. */
export function outboxEventJson(input: EventInput) {
  const e = outboxEventRow(input);
  return { id: e.id, organization_id: e.organizationId, type: e.type, data: e.data, created_at: e.createdAt, trace_context: e.traceContext };
}

export function recordEvent(em: EntityManager, input: EventInput): OutboxEvent {
  return em.create(OutboxEvent, outboxEventRow(input));
}

/** The columns of an outbox row, in the order `insertEventsSql` expects its SELECT to give them. */
export const EVENT_COLUMNS = 'id, organization_id, type, data, created_at';
/** `EVENT_COLUMNS` and the recording span's `traceparent`, for a SELECT that gives that too. */
export const TRACED_EVENT_COLUMNS = `${EVENT_COLUMNS}, trace_context`;

/**
 * The INSERT of the outbox rows `select` returns (its columns as `columns`), for a
 * data-modifying CTE or a statement of the caller's (its other writes and its events commit
 * together).
 */
export const insertEventsSql = (select: string, columns: typeof EVENT_COLUMNS | typeof TRACED_EVENT_COLUMNS = EVENT_COLUMNS) =>
  `insert into events (${columns}) ${select}`;

/**
 * The dispatcher's first step, one statement on the hot pool: takes up to `limit` undispatched
 * events, oldest first (skip locked, as the dispatcher's transaction does), and stamps those
 * that no active webhook of their organization subscribes to: there is nothing to start for
 * them. Returns how many it stamped and how many of the events it took have a subscriber;
 * those are left to the dispatcher's transaction, which starts their deliveries before it
 * stamps them. An organization without webhooks, the common case, cost the dispatcher a
 * transaction of five statements per batch, about three in five of all the statements a
 * greeting conversation made (docs/performance.md); now it costs this one.
 */
const STAMP_UNSUBSCRIBED = {
  name: 'events-stamp-unsubscribed',
  text: `with taken as (
           select e.id, exists (select 1 from webhooks w where w.active and w.organization_id = e.organization_id and e.type = any(w.events)) as subscribed
             from events e where e.dispatched_at is null
            order by e.created_at limit $1 for update skip locked
         ), stamped as (
           update events e set dispatched_at = now() from taken t where e.id = t.id and not t.subscribed returning e.id
         )
         select (select count(*) from stamped)::int as stamped, (select count(*) from taken where subscribed)::int as subscribed`,
};

export async function stampUnsubscribedEvents(pool: HotPool, limit: number): Promise<{ stamped: number; subscribed: number }> {
  const [row] = await hotQuery<{ stamped: number; subscribed: number }>(pool, STAMP_UNSUBSCRIBED, [limit]);
  return row!;
}

/**
 * Stamps the events a dispatcher pass handled (inside its transaction, which holds their rows locked).
 * `= any(array(...))`: the ids are then the primary key's index condition. With `in (select ...)`
 * the planner expects 100 ids and hashes them against a scan of the whole table, as long as
 * it is small enough: 1.4 ms at 12,000 events against 0.09 ms (docs/performance.md).
 */
export async function markEventsDispatched(tx: SqlRunner, ids: string[]): Promise<void> {
  await tx.execute(`update events set dispatched_at = now() where id = any(array(select jsonb_array_elements_text(?::jsonb)))`, [JSON.stringify(ids)]);
}

/** Deletes events dispatched more than `retentionDays` ago; returns how many. */
export async function purgeDispatchedEvents(runner: SqlRunner, retentionDays: number): Promise<number> {
  const rows = await runner.execute<unknown[]>(`delete from events where dispatched_at < now() - (? * interval '1 day') returning id`, [retentionDays]);
  return rows.length;
}

/** Events not yet dispatched to webhooks, and the age of the oldest in seconds (0 when none); the partial index events_undispatched_idx answers it. */
export async function undispatchedBacklog(runner: SqlRunner): Promise<{ count: number; oldestSeconds: number }> {
  const [row] = await runner.execute<Array<{ count: number; oldest: number }>>(
    `select count(*)::int as count, coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest from events where dispatched_at is null`,
  );
  return { count: row?.count ?? 0, oldestSeconds: row?.oldest ?? 0 };
}
