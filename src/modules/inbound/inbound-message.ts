import type { SqlFragment } from '../../db/hot-query';

/** An inbound customer message as `POST /v1/messages` takes it: the targets read it, the write records it. */
export interface InboundMessage {
  channel: string;
  customer_id: string;
  message: string;
  metadata?: Record<string, unknown>;
  customer?: { name?: string };
  /** The provider's id of the message: a second message with it on the channel is a redelivery. */
  provider_message_id?: string;
}

/**
 * A write of the caller's that commits with the message, composed into the message's one
 * statement (message.writes.ts, handoff-intake.ts) as a CTE of its own: one round trip and
 * one commit instead of two (the channel hook's customer window, whose table the channels
 * module owns: it builds the fragment). It runs whatever the statement finds, redeliveries
 * included, so it must be idempotent.
 */
export interface CompanionWrite extends SqlFragment {
  /** Names the statement's variant (each is prepared once per connection): one name per SQL text. */
  name: string;
}
