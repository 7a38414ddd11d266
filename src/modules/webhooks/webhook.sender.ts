/**
 * Owns one HTTP attempt to a webhook endpoint: POST the exact bytes with the signature
 * headers through an undici Agent whose connect-time lookup refuses forbidden addresses,
 * within the timeout, never following redirects (undici's `request` does not), reading
 * at most 20 KB of the answer. It reports what happened; deciding what that means
 * (delivered / retry / final) is `classifyAnswer`'s job.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { Agent, request } from 'undici';
import type { Config } from '../../config';
import { openSecret, type SecretPlace, sealedAt } from '../../secrets';
import { deliveryHeaders } from './webhook.signature';
import { ForbiddenTargetError, isForbiddenAddress } from './webhook-target';
import { guardedLookup } from './webhook-target';

export const MAX_RESPONSE_BODY_BYTES = 20 * 1024;

export type SendOutcome =
  | { answered: true; status: number; durationMs: number; body: string; retryAfterMs: number | undefined }
  | { answered: false; durationMs: number; reason: 'timeout' | 'forbidden' | 'connection'; error: string };

export type AnswerClass = 'delivered' | 'retry' | 'final' | 'gone';

/** DESIGN "Which answers count": 2xx delivered; 410 gone; 408/429/5xx/3xx retried; other 4xx final. */
export function classifyAnswer(status: number): AnswerClass {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'gone';
  if (status === 408 || status === 429) return 'retry';
  if (status >= 400 && status < 500) return 'final';
  return 'retry';
}

/** Retry-After as delay seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** PEM of extra trusted CAs, added to (not replacing) the system roots. */
  extraCa?: string;
  /** Opens a signing secret as stored (sealed at rest, bound to its place: src/secrets.ts). */
  openSecret: (stored: string, place: SecretPlace) => string;
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly opts: SenderOptions) {
    this.agent = new Agent({
      connect: {
        lookup: guardedLookup(opts.allowPrivateNetworks),
        timeout: opts.timeoutMs,
        // One TLS context for every connection. Given `ca` instead, each new connection
        // built its own context and parsed the ~140 system roots plus the extra CA again:
        // 13 % of the worker's main thread in the webhooks benchmark (docs/performance.md).
        secureContext: tls.createSecureContext(opts.extraCa ? { ca: [...tls.rootCertificates, opts.extraCa] } : {}),
      },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      keepAliveTimeout: 4_000,
    });
  }

  static fromConfig(config: Config): WebhookSender {
    return new WebhookSender({
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      ...(config.WEBHOOK_EXTRA_CA_FILE ? { extraCa: readFileSync(config.WEBHOOK_EXTRA_CA_FILE, 'utf8') } : {}),
      openSecret: (stored, place) => openSecret(config, stored, place),
    });
  }

  /** `secret` and `previousSecret` as stored (sealed): opened here, just before signing, so no other caller holds them in clear. */
  async send(input: { webhookId: string; url: string; secret: string; previousSecret?: string | null; body: string; eventId: string; attempt: number }): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const url = new URL(input.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    // A literal IP never goes through the lookup, so check it here.
    if (!this.opts.allowPrivateNetworks && net.isIP(host) && isForbiddenAddress(host)) {
      return { answered: false, durationMs: 0, reason: 'forbidden', error: new ForbiddenTargetError(host).message };
    }
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method: 'POST',
        headers: deliveryHeaders({
          secret: this.opts.openSecret(input.secret, sealedAt.webhookSecret(input.webhookId)),
          previousSecret: input.previousSecret ? this.opts.openSecret(input.previousSecret, sealedAt.webhookPreviousSecret(input.webhookId)) : null,
          eventId: input.eventId, attempt: input.attempt, body: input.body }),
        body: input.body,
        dispatcher: this.agent,
        signal,
      });
    } catch (err) {
      return { answered: false, durationMs: elapsed(), ...describeError(err, this.opts.timeoutMs) };
    }
    const durationMs = elapsed();
    const body = await readLimited(res.body, MAX_RESPONSE_BODY_BYTES);
    return { answered: true, status: res.statusCode, durationMs, body, retryAfterMs: parseRetryAfter(res.headers['retry-after']) };
  }

  async close(): Promise<void> {
    await this.agent.close().catch(() => undefined);
  }
}

/** Reads up to `limit` bytes and drops the rest of the stream (and the connection with it). */
async function readLimited(stream: NodeJS.ReadableStream & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
      chunks.push(buf.subarray(0, limit - size));
      size += buf.length;
      if (size >= limit) break; // leaving the loop destroys the stream
    }
  } catch {
    // A body cut short (timeout, reset) does not change the status we already have.
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

function causes(err: unknown): Array<Error & { code?: string }> {
  const out: Array<Error & { code?: string }> = [];
  // Duck-typed: AbortSignal's DOMException is not an `Error` of this realm under jest.
  for (let e = err; typeof e === 'object' && e !== null && 'message' in e && out.length < 5; e = (e as { cause?: unknown }).cause) {
    out.push(e as Error & { code?: string });
  }
  return out;
}

function describeError(err: unknown, timeoutMs: number): { reason: 'timeout' | 'forbidden' | 'connection'; error: string } {
  const chain = causes(err);
  const forbidden = chain.find((e) => e.code === 'ERR_WEBHOOK_FORBIDDEN_TARGET');
  if (forbidden) return { reason: 'forbidden', error: forbidden.message };
  const timedOut = chain.some(
    (e) => e.name === 'TimeoutError' || e.name === 'AbortError' || /TIMEOUT/.test(e.code ?? '') || e.code === 'UND_ERR_ABORTED',
  );
  if (timedOut) return { reason: 'timeout', error: `no answer within ${timeoutMs} ms` };
  const first = chain[0];
  const code = chain.map((e) => e.code).find(Boolean);
  return { reason: 'connection', error: `connection failed${code ? ` (${code})` : ''}: ${first?.message ?? String(err)}`.slice(0, 500) };
}
