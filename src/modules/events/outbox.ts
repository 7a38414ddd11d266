/**
 * `recordEvent` is how every module emits an event: it persists an outbox row in the
 * caller's EntityManager, so the event commits (or rolls back) with the change that
 * caused it. Call it before the caller's flush / inside its transaction.
 */
import type { EntityManager } from '@mikro-orm/core';
import { newId } from '../../ids';
import { type EventType, OutboxEvent } from './event.entity';

export interface EventInput {
  organizationId: string;
  type: EventType;
  data: Record<string, unknown>;
  /** When the described thing happened; defaults to now. */
  occurredAt?: Date;
}

/** The outbox row of an event, for a caller that writes it inside a statement of its own (one round trip). */
export function outboxEventRow(input: EventInput): Pick<OutboxEvent, 'id' | 'organizationId' | 'type' | 'data' | 'createdAt'> {
  return {
    id: newId('event'),
    organizationId: input.organizationId,
    type: input.type,
    data: input.data,
    createdAt: input.occurredAt ?? new Date(),
  };
}

export function recordEvent(em: EntityManager, input: EventInput): OutboxEvent {
  return em.create(OutboxEvent, outboxEventRow(input));
}
