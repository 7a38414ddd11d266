/**
 * Owns the development fallback of outbound delivery, for an organization without channel
 * connections (channel-delivery.ts decides when it applies). Every outbound message is stored
 * as the conversation transcript (the default adapter); when CHANNEL_PROVIDER_URL is set the HTTP
 * adapter also POSTs it there first, with the message's dedupe key as `Idempotency-Key` so
 * a provider can drop the duplicate an activity retry sends.
 *
 * Provider answers: 2xx sent; 408, 429, 5xx, timeouts and connection errors are retried by
 * the activity; any other 4xx is final (`ChannelRejectedError` → execution api_error).
 */
import type { Config } from '../../config';

export interface OutboundMessage {
  dedupeKey: string;
  organizationId: string;
  channel: string;
  customerId: string | null;
  externalId: string | null;
  /** Null for an agent message (a person's, POST /v1/customers/{id}/messages). */
  executionId: string | null;
  nodeId: string | null;
  text: string;
}

export class ChannelRejectedError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The failed step's error type (temporal ChannelErrorTypes); unset: api_error. */
    readonly errorType?: string,
  ) {
    super(message);
    this.name = 'ChannelRejectedError';
  }
}

export interface ChannelAdapter {
  readonly name: 'transcript' | 'http';
  /** Delivers outside the service; the transcript row is written by the caller either way. */
  deliver(msg: OutboundMessage): Promise<void>;
}

const transcriptAdapter: ChannelAdapter = { name: 'transcript', async deliver() {} };

export function channelAdapterFor(config: Pick<Config, 'CHANNEL_PROVIDER_URL' | 'CHANNEL_PROVIDER_TIMEOUT_MS'>): ChannelAdapter {
  const url = config.CHANNEL_PROVIDER_URL;
  if (!url) return transcriptAdapter;
  return {
    name: 'http',
    async deliver(msg) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': msg.dedupeKey },
        body: JSON.stringify({
          idempotency_key: msg.dedupeKey,
          channel: msg.channel,
          to: msg.externalId,
          customer_id: msg.customerId,
          text: msg.text,
          execution_id: msg.executionId,
          node_id: msg.nodeId,
        }),
        signal: AbortSignal.timeout(config.CHANNEL_PROVIDER_TIMEOUT_MS),
        redirect: 'manual',
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return;
      if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) {
        throw new ChannelRejectedError(res.status, `channel provider answered ${res.status}`);
      }
      throw new Error(`channel provider answered ${res.status}`);
    },
  };
}
