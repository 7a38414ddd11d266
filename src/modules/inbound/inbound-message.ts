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
