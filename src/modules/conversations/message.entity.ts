/**
 * The conversation transcript (`messages`): every inbound and outbound message is a row, and
 * an outbound message sent by an execution carries a dedupe key so an activity retry never
 * stores (or sends) it twice.
 */
import { EntitySchema, OptionalProps } from '@mikro-orm/core';

export type MessageDirection = 'inbound' | 'outbound';
/** Who wrote a message: stored only for `agent` (a person, POST /v1/customers/{id}/messages); null reads as `customer` inbound, `bot` outbound. */
export type MessageSender = 'customer' | 'bot' | 'agent';

export class ConversationMessage {
  [OptionalProps]?: 'metadata' | 'executionId' | 'nodeId' | 'dedupeKey' | 'language' | 'deliveredAt' | 'replyToWait' | 'createdAt' | 'sender' | 'sentAt' | 'sendError';
  id!: string;
  organizationId!: string;
  customerId!: string;
  channel!: string;
  direction!: MessageDirection;
  text!: string;
  metadata: Record<string, unknown> = {};
  executionId: string | null = null;
  nodeId: string | null = null;
  dedupeKey: string | null = null;
  language: string | null = null;
  deliveredAt: Date | null = null;
  /** For an inbound reply: the form wait (prompt dedupe key) it claimed. */
  replyToWait: string | null = null;
  /** Stored only for `agent` (senderOf reads the others from the direction). */
  sender: 'agent' | null = null;
  /** An agent message: when the provider accepted it. */
  sentAt: Date | null = null;
  /** An agent message: the final refusal of its send (`{type, message}`). */
  sendError: { type: string; message: string } | null = null;
  createdAt: Date = new Date();
}

export const senderOf = (m: Pick<ConversationMessage, 'sender' | 'direction'>): MessageSender => m.sender ?? (m.direction === 'inbound' ? 'customer' : 'bot');

export const ConversationMessageSchema = new EntitySchema<ConversationMessage>({
  class: ConversationMessage,
  tableName: 'messages',
  properties: {
    id: { type: 'string', primary: true },
    organizationId: { type: 'string', fieldName: 'organization_id' },
    customerId: { type: 'string', fieldName: 'customer_id' },
    channel: { type: 'string' },
    direction: { type: 'string' },
    text: { type: 'text' },
    metadata: { type: 'json' },
    executionId: { type: 'string', fieldName: 'execution_id', nullable: true },
    nodeId: { type: 'string', fieldName: 'node_id', nullable: true },
    dedupeKey: { type: 'string', fieldName: 'dedupe_key', nullable: true },
    language: { type: 'string', nullable: true },
    deliveredAt: { type: 'Date', fieldName: 'delivered_at', nullable: true },
    replyToWait: { type: 'string', fieldName: 'reply_to_wait', nullable: true },
    sender: { type: 'string', nullable: true },
    sentAt: { type: 'Date', fieldName: 'sent_at', nullable: true },
    sendError: { type: 'json', fieldName: 'send_error', nullable: true },
    createdAt: { type: 'Date', fieldName: 'created_at' },
  },
});
