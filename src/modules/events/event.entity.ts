/**
 * The event outbox: every event of the contract (workflow.started, message.sent, ...) is a
 * row written in the same transaction as the change it describes, so no event is lost
 * when a process dies. A dispatcher turns each row into one delivery per subscribed
 * webhook and stamps `dispatched_at`.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

export const EVENT_TYPES = [
  'workflow.started',
  'workflow.completed',
  'workflow.failed',
  'message.received',
  'message.sent',
  'trigger.activated',
  'customer.created',
  'customer.updated',
  'export.completed',
  'export.failed',
  'report.completed',
  'report.failed',
  'replay.completed',
  'webhook.disabled',
  'message.status_updated',
  'conversation.handoff_started',
  'conversation.handoff_ended',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export class OutboxEvent {
  [OptionalProps]?: 'createdAt' | 'dispatchedAt' | 'traceContext';
  id!: string;
  organizationId!: string;
  type!: EventType;
  data!: Record<string, unknown>;
  createdAt: Date = new Date();
  dispatchedAt: Date | null = null;
  /** The `traceparent` of the span that recorded it (telemetry/trace-context.ts); null while tracing is off. */
  traceContext: string | null = null;
}

export const OutboxEventSchema = new EntitySchema<OutboxEvent>({
  class: OutboxEvent,
  tableName: 'events',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    type: { type: 'string' },
    data: { type: 'json' },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    dispatchedAt: { type: 'Date', fieldName: 'dispatched_at', nullable: true },
    traceContext: { type: 'string', fieldName: 'trace_context', nullable: true },
  },
});
