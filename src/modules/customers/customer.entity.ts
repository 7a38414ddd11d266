/**
 * Customers: one per (channel, external id), created on its first inbound message. Their
 * transcript is the conversations module's (`messages`).
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

export class Customer {
  [OptionalProps]?: 'name' | 'tags' | 'metadata' | 'messageCount' | 'firstSeenAt' | 'lastMessageAt' | 'createdAt' | 'updatedAt';
  id!: string;
  organizationId!: string;
  channel!: string;
  externalId!: string;
  name: string | null = null;
  /** Free-form labels set through PUT /v1/customers/{id}; analytics segments by them. */
  tags: string[] = [];
  metadata: Record<string, unknown> = {};
  messageCount = 0;
  firstSeenAt: Date = new Date();
  lastMessageAt: Date | null = null;
  createdAt: Date = new Date();
  updatedAt: Date = new Date();
}

export const CustomerSchema = new EntitySchema<Customer>({
  class: Customer,
  tableName: 'customers',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    channel: { type: 'string' },
    externalId: { type: 'string', fieldName: 'external_id' },
    name: { type: 'string', nullable: true },
    tags: { type: 'text[]' },
    metadata: { type: 'json' },
    messageCount: { type: 'integer', fieldName: 'message_count' },
    firstSeenAt: { type: 'Date', fieldName: 'first_seen_at' },
    lastMessageAt: { type: 'Date', fieldName: 'last_message_at', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
  },
});
