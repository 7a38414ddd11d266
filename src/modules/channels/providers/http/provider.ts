/**
 * The generic HTTP provider (`http`): outbound POSTs to the connection's URL (the body of
 * CHANNEL_PROVIDER_URL's, the connection's secret as a Bearer token); no window; no inbound
 * hook (the provider calls POST /v1/messages).
 */
import { z } from '../../../../http/zod';
import { Channel } from '../../../workflows/workflow.schemas';
import type { ChannelProvider } from '../../channel-provider';
import { secretField } from '../config-fields';

const config = z.strictObject({
  url: z.url({ protocol: /^https?$/ }).max(2048).openapi({ description: 'Where outbound messages are POSTed (the generic adapter)' }),
  channel: Channel,
  secret: secretField('Sent as a Bearer token with each POST.').optional(),
});

/** A non-2xx answer of the provider's URL. */
class HttpProviderAnswer extends Error {
  constructor(readonly status: number) {
    super(`channel provider answered ${status}`);
    this.name = 'HttpProviderAnswer';
  }
}

export const http: ChannelProvider = {
  type: 'http',
  config,
  fields: { shown: ['url', 'channel'], secret: ['secret'] },
  customerServiceWindow: false,
  canSend: () => null,
  async send({ connection: c, config: cfg, secret, to, target, msg }) {
    const bearer = secret('secret');
    const res = await fetch(c.config.url!, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': msg.dedupeKey, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
      body: JSON.stringify({
        idempotency_key: msg.dedupeKey,
        channel: c.channel,
        to,
        customer_id: target.customerId,
        text: msg.text,
        execution_id: target.executionId,
        node_id: msg.nodeId,
      }),
      signal: AbortSignal.timeout(cfg.CHANNEL_PROVIDER_TIMEOUT_MS),
      redirect: 'manual',
    });
    const answer = (await res.json().catch(() => undefined)) as { id?: unknown; message_id?: unknown } | undefined;
    if (res.status < 200 || res.status >= 300) throw new HttpProviderAnswer(res.status);
    const id = answer?.message_id ?? answer?.id;
    return typeof id === 'string' && id.length <= 255 ? id : undefined;
  },
  mapError(err) {
    if (!(err instanceof HttpProviderAnswer)) return undefined;
    const { status, message } = err;
    // A refused credential fails the step; the connection keeps its status (the URL is the organization's own).
    if (status === 401 || status === 403) return { kind: 'unauthorized', status, message, marksConnection: false };
    if (status >= 400 && status < 500 && status !== 408 && status !== 429) return { kind: 'rejected', status, message };
    return { kind: 'retryable', status, message };
  },
  async test({ connection: c, config: cfg, secret }) {
    const bearer = secret('secret');
    try {
      const res = await fetch(c.config.url!, {
        method: 'GET',
        headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
        signal: AbortSignal.timeout(cfg.CHANNEL_PROVIDER_TIMEOUT_MS),
        redirect: 'manual',
      });
      await res.arrayBuffer().catch(() => undefined);
      // A send endpoint may refuse GET (405): it answered, so it is reachable; a refused credential is not.
      const ok = res.status < 500 && res.status !== 401 && res.status !== 403;
      return { ok, status_code: res.status, error_message: ok ? null : `the provider answered ${res.status}` };
    } catch (err) {
      return { ok: false, status_code: 0, error_message: `the provider did not answer: ${(err as Error).message}` };
    }
  },
};
