/**
 * Owns the `ChannelProvider` interface: what one kind of channel connection (`type`) brings,
 * each in its own folder under providers/<type>/ and listed once in providers/index.ts. The
 * channels module asks the registry instead of checking `type` by hand:
 * - the connection's config schema (which fields are shown, which sealed) and `webhook_url`;
 * - the inbound hook (handshake, verify, parse);
 * - the send rules (`customerServiceWindow`, `canSend`), the send itself, what its failures
 *   mean (`mapError`), and the connection check of `POST /v1/channels/{id}/test` (`test`).
 * What is common to every provider (routing, the recipient's window, marking a connection
 * `unauthorized`, recording the provider's message id) stays in channel-delivery.ts.
 */
import type { z } from '../../http/zod';
import type { Config } from '../../config';
import type { MessageTemplateSpec, PromptChoices } from '../../../temporal/executions.shared';
import type { ChannelConnection, ChannelSecretName } from './channel.entity';
import type { DeliveryStatus } from '../conversations/message-deliveries';

/** What a provider's hook sees of the HTTP request (no Koa: the route hands it over). */
export interface HookRequest {
  query: Record<string, unknown>;
  header(name: string): string;
  /** The exact bytes received, for signatures. */
  rawBody: string;
  /** The parsed body (JSON, or a form's fields). */
  body: unknown;
  /** The URL the provider called (scheme, host, path and query), for signatures over it (Twilio's). */
  url?: string;
}

/** An answer in the provider's own terms: a handshake (Meta's `hub.challenge`), or what a POST is answered with (Twilio's TwiML). */
export interface HookHandshakeAnswer {
  type: string;
  body: string;
}

/** What the route did with a POST's items (the JSON answer, unless the provider has its own). */
export interface HookSummary {
  messages: number;
  duplicates: number;
  statuses: number;
  ignored: number;
  failed: number;
}

/** A customer's message in a hook body, with the provider's ids. */
export interface InboundItem {
  /** The customer's id on the channel. */
  externalId: string;
  providerMessageId: string;
  text: string;
  metadata: Record<string, unknown>;
  name?: string;
  sentAt: Date;
  /** Which of the organization's numbers or accounts it was sent to (WhatsApp's `phone_number_id`, a Page or account id): the connection owning that id takes it. */
  to?: string;
}

/** A delivery status of one of our sends, by the provider's message id. */
export interface StatusItem {
  providerMessageId: string;
  status: DeliveryStatus;
  at: Date;
  error?: { code: number | null; title: string | null; message: string | null };
  /** As `InboundItem.to`. */
  to?: string;
}

/**
 * A provider's notice about a customer's identity (never a message of theirs): a number change
 * moves the customer to `newExternalId`; other kinds are kept on the customer. Nothing is sent.
 */
export interface IdentityChangeItem {
  externalId: string;
  kind: string;
  newExternalId?: string;
  identity?: string;
  at: Date;
  to?: string;
}

/** The inbound messages, statuses and ignorable events of one hook body, with the provider's own ids. */
export interface ParsedHook {
  messages: InboundItem[];
  statuses: StatusItem[];
  identityChanges?: IdentityChangeItem[];
  /** Items skipped: echoes of our own sends, unknown shapes, other fields. */
  ignored: number;
}

export interface ChannelHook {
  /**
   * How the provider posts: JSON (the default), or `form` (`application/x-www-form-urlencoded`,
   * Twilio's), parsed by the route before the JSON body layer; `rawBody` and `body` (the
   * fields, flat) are given either way.
   */
  readonly body?: 'json' | 'form';
  /** The answer to a processed POST when the provider expects its own (Twilio: an empty TwiML `<Response/>`); default `{data: summary}`. */
  answer?(summary: HookSummary): HookHandshakeAnswer;
  /** GET: the provider's subscription handshake; throws a 403 AppError when it does not hold. */
  handshake(req: HookRequest, secret: (name: ChannelSecretName) => string | undefined): HookHandshakeAnswer;
  /** POST: the signature (and replay) rules; throws a 401 AppError (Twilio's: 403) when the body is not the provider's. */
  verify(req: HookRequest, secret: (name: ChannelSecretName) => string | undefined): void;
  /**
   * POST, once verified: the body as inbound content, and how many items (entries) it held;
   * `content` is null when the body is not for this connection (acknowledged, ignored). Throws a
   * 400 AppError when it is not the provider's shape at all.
   */
  parse(connection: ChannelConnection, body: unknown): { items: number; content: ParsedHook | null };
}

/** One message to a customer: a node's (execution) or a person's (agent message). */
export interface ChannelSend {
  dedupeKey: string;
  /** The execution's node that sends it (null: an agent message). */
  nodeId: string | null;
  text: string;
  template?: MessageTemplateSpec;
  /** A scored form field's answers: sent as a question with choices where the provider has them. */
  choices?: PromptChoices;
}

/** Who a send is for: an execution's customer, or an agent message's (no execution). */
export interface SendTarget {
  organizationId: string;
  customerId: string | null;
  executionId: string | null;
}

/** Where the customer's window stands on the connection (always open without a window). */
export interface SendWindow {
  open: boolean;
  /** The customer's last inbound message on the connection, if any. */
  last: Date | undefined;
}

/** What every provider call gets: the connection, the service's config, its secrets opened on demand. */
export interface ProviderCall {
  connection: ChannelConnection;
  config: Config;
  secret(name: ChannelSecretName): string | undefined;
}

export interface ProviderSend extends ProviderCall {
  /** The customer's id on the channel (phone number, IGSID, PSID...). */
  to: string;
  target: SendTarget;
  msg: ChannelSend;
  window: SendWindow;
}

/** What a failed provider call means for the step (and the connection). */
export interface ProviderFailure {
  /**
   * `retryable`: try again within the provider budget; `unauthorized`: the credentials were
   * refused; `window_closed`; `undeliverable`; `rejected`: any other final refusal.
   */
  kind: 'retryable' | 'unauthorized' | 'window_closed' | 'undeliverable' | 'rejected';
  /** The provider's HTTP status; 0 when it did not answer. */
  status: number;
  message: string;
  /** An `unauthorized` answer marks the connection `unauthorized` (later sends fail at once) unless false. */
  marksConnection?: boolean;
}

export type ProviderTestResult = { ok: boolean; status_code: number; error_message: string | null; unauthorized?: boolean };

export interface ChannelProvider {
  readonly type: ChannelConnection['type'];
  /** The conversation channel its connections serve; absent: the connection's `config.channel` (http). */
  readonly channel?: string;
  /** The config of `POST /v1/channels` for this type (every field; secrets write-only). */
  readonly config: z.ZodObject<z.core.$ZodShape, z.core.$strict>;
  /** Which config fields a connection shows, and which it keeps sealed. */
  readonly fields: { shown: string[]; secret: ChannelSecretName[] };
  /** The address the provider calls for a connection (its `webhook_url`), if it calls one. */
  webhookUrl?(config: Pick<Config, 'BASE_URL'>, connectionId: string): string;
  /** Its inbound hook at `/hooks/channels/{id}`, if it has one there. */
  readonly hook?: ChannelHook;
  /**
   * Free-form messages only within 24 hours of the customer's last one (CUSTOMER_SERVICE_WINDOW_HOURS);
   * a function when it depends on the connection (Twilio: WhatsApp has the window, SMS has none).
   */
  readonly customerServiceWindow: boolean | ((connection: ChannelConnection) => boolean);
  /** Null when `msg` may go out with the window as it stands; otherwise why not (the step fails `customer_service_window_closed`). */
  canSend(msg: ChannelSend, window: SendWindow, connection: ChannelConnection): string | null;
  /** Sends `msg`; resolves with the provider's message id. Absent: the type sends no messages here (a call speaks in its TwiML answers). */
  send?(call: ProviderSend): Promise<string | undefined>;
  /** What an error thrown by `send` means; undefined: not the provider's answer (thrown as is, retried). */
  mapError(err: unknown, connection: ChannelConnection): ProviderFailure | undefined;
  /** `POST /v1/channels/{id}/test`: calls the provider with the stored credentials. */
  test(call: ProviderCall): Promise<ProviderTestResult>;
}

/** Whether sends through `connection` keep to the 24-hour customer service window. */
export const hasCustomerServiceWindow = (provider: ChannelProvider, connection: ChannelConnection): boolean =>
  typeof provider.customerServiceWindow === 'function' ? provider.customerServiceWindow(connection) : provider.customerServiceWindow;
