/**
 * Owns the `ChannelProvider` interface: what one kind of channel connection (`type`) brings,
 * each in its own folder under providers/<type>/ and listed once in providers/index.ts. The
 * channels module asks the registry instead of checking `type` by hand.
 *
 * Phase 1: the fields (which config is shown, which sealed), the `webhook_url` and the inbound
 * hook (handshake, verify, parse) go through the registry; sending, window rules and the connection check still live in
 * channel-delivery.ts and channel.service.ts, keyed by the same provider folders.
 */
import type { Config } from '../../config';
import type { ChannelConnection, ChannelSecretName } from './channel.entity';
import type { MetaHookContent } from './providers/meta/meta-hook-payloads';

/** What a provider's hook sees of the HTTP request (no Koa: the route hands it over). */
export interface HookRequest {
  query: Record<string, unknown>;
  header(name: string): string;
  /** The exact bytes received, for signatures. */
  rawBody: string;
  /** The parsed JSON body. */
  body: unknown;
}

/** A handshake answered by the provider itself (Meta's `hub.challenge`). */
export interface HookHandshakeAnswer {
  type: string;
  body: string;
}

/** The inbound messages, statuses and ignorable events of one hook body, with the provider's own ids. */
export type ParsedHook = MetaHookContent;

export interface ChannelHook {
  /** GET: the provider's subscription handshake; throws a 403 AppError when it does not hold. */
  handshake(req: HookRequest, secret: (name: ChannelSecretName) => string | undefined): HookHandshakeAnswer;
  /** POST: the signature (and replay) rules; throws a 401 AppError when the body is not the provider's. */
  verify(req: HookRequest, secret: (name: ChannelSecretName) => string | undefined): void;
  /**
   * POST, once verified: the body as inbound content, and how many items (entries) it held;
   * `content` is null when the body is not for this connection (acknowledged, ignored). Throws a
   * 400 AppError when it is not the provider's shape at all.
   */
  parse(connection: ChannelConnection, body: unknown): { items: number; content: ParsedHook | null };
}

export interface ChannelProvider {
  readonly type: ChannelConnection['type'];
  /** Which config fields a connection shows, and which it keeps sealed. */
  readonly fields: { shown: string[]; secret: ChannelSecretName[] };
  /** The address the provider calls for a connection (its `webhook_url`), if it calls one. */
  webhookUrl?(config: Pick<Config, 'BASE_URL'>, connectionId: string): string;
  /** Its inbound hook at `/hooks/channels/{id}`, if it has one there. */
  readonly hook?: ChannelHook;
}
