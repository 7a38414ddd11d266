/**
 * Owns rate limiting: fixed windows counted in Redis by a Lua script, so all the limits
 * that apply to a request are checked and counted atomically and every counter gets its
 * expiry in the same script (no key lives forever).
 *
 * A request passes only if every applicable limit has room; a refused request counts
 * against none. The headers describe the limit with the least room left.
 *
 * Requests that arrive while a script call is in flight are checked together by the next
 * call, one after the other in arrival order, exactly as separate calls would count them
 * (Redis runs a script atomically, so the batch is atomic as a whole, each request as
 * before). One command per batch instead of one per request: ioredis's per-command work
 * (command object, pipeline entry, several promises) was the largest part of the rate
 * limit's cost on our thread, and Redis runs one script call instead of many on the same
 * cores (docs/performance.md). With no call in flight a check is sent at once: no added
 * wait at low load.
 *
 * When Redis cannot be reached the limiter falls back to the same windows counted in this
 * process's memory: limits keep holding per process, requests keep being served, and a
 * warning is logged (at most once a minute). Redis holds nothing that cannot be lost.
 */
import type Redis from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { AppError } from './errors';

export const LIMIT_NAMES = [
  'credential',
  'inbound_webhook',
  'resource_read',
  'resource_write',
  'resource_delete',
  'execution_ops',
  'analytics_realtime',
  'analytics_historical',
  'analytics_reports',
  'analytics_export',
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];

export interface LimitRule {
  name: LimitName | string;
  limit: number;
  windowMs: number;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

export function limitRulesFromConfig(c: Config): Record<LimitName, LimitRule> {
  return {
    credential: { name: 'credential', limit: c.RATE_LIMIT_CREDENTIAL_PER_HOUR, windowMs: HOUR },
    inbound_webhook: { name: 'inbound_webhook', limit: c.RATE_LIMIT_INBOUND_WEBHOOK_PER_MINUTE, windowMs: MINUTE },
    resource_read: { name: 'resource_read', limit: c.RATE_LIMIT_RESOURCE_READ_PER_HOUR, windowMs: HOUR },
    resource_write: { name: 'resource_write', limit: c.RATE_LIMIT_RESOURCE_WRITE_PER_HOUR, windowMs: HOUR },
    resource_delete: { name: 'resource_delete', limit: c.RATE_LIMIT_RESOURCE_DELETE_PER_HOUR, windowMs: HOUR },
    execution_ops: { name: 'execution_ops', limit: c.RATE_LIMIT_EXECUTION_OPS_PER_HOUR, windowMs: HOUR },
    analytics_realtime: { name: 'analytics_realtime', limit: c.RATE_LIMIT_ANALYTICS_REALTIME_PER_HOUR, windowMs: HOUR },
    analytics_historical: { name: 'analytics_historical', limit: c.RATE_LIMIT_ANALYTICS_HISTORICAL_PER_HOUR, windowMs: HOUR },
    analytics_reports: { name: 'analytics_reports', limit: c.RATE_LIMIT_ANALYTICS_REPORTS_PER_HOUR, windowMs: HOUR },
    analytics_export: { name: 'analytics_export', limit: c.RATE_LIMIT_ANALYTICS_EXPORT_PER_HOUR, windowMs: HOUR },
  };
}

export interface LimitCheck {
  rule: LimitRule;
  /** Who is counted: a credential id, a trigger id, ... */
  subject: string;
}

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the tightest window resets. */
  resetAt: number;
  retryAfterSeconds: number;
}

/**
 * KEYS: every request's counters, request after request. ARGV: per request its number of
 * limits n, then window ms and limit per key, in key order.
 * Returns per request {allowed (1|0), count1, pttl1, …, countn, pttln}.
 */
const SCRIPT = `
local out = {}
local k = 0
local a = 1
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  local allowed = 1
  for i = 1, n do
    local count = tonumber(redis.call('GET', KEYS[k + i]) or '0')
    if count >= tonumber(ARGV[a + 2 * i]) then allowed = 0 end
  end
  out[#out + 1] = allowed
  for i = 1, n do
    local key = KEYS[k + i]
    local window = tonumber(ARGV[a + 2 * i - 1])
    local count
    local ttl
    if allowed == 1 then
      count = redis.call('INCR', key)
      ttl = redis.call('PTTL', key)
      if ttl < 0 then
        redis.call('PEXPIRE', key, window)
        ttl = window
      end
    else
      count = tonumber(redis.call('GET', key) or '0')
      ttl = redis.call('PTTL', key)
      if ttl < 0 then ttl = window end
    end
    out[#out + 1] = count
    out[#out + 1] = ttl
  end
  k = k + n
  a = a + 1 + 2 * n
end
return out
`;

/** Bounds one script run (Redis serves nothing else meanwhile); the rest goes in the next call. */
const MAX_CHECKS_PER_CALL = 256;

type RedisWithLimitScript = Redis & { checkRateLimitBatch(numKeys: number, ...keysAndArgs: Array<string | number>): Promise<number[]> };

interface Window {
  count: number;
  expiresAt: number;
}

interface Counted {
  allowed: boolean;
  counts: Array<{ count: number; ttlMs: number }>;
}

interface PendingCheck {
  keys: string[];
  checks: LimitCheck[];
  /** When the request asked: windows and reset times count from here, as with a call of its own. */
  now: number;
  resolve(result: Counted): void;
}

export class RateLimiter {
  private readonly memory = new Map<string, Window>();
  private lastWarnAt = 0;
  /** Checks waiting for the call in flight to finish; they go together in the next one. */
  private queue: PendingCheck[] = [];
  private inFlight = false;
  /** Subjects refused by a check, until the refusing window resets. */
  private readonly refusedUntil = new Map<string, number>();

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly logger: Logger,
  ) {
    // A defined command is sent as EVALSHA: the script body crosses the wire once, not per call.
    if (!('checkRateLimitBatch' in redis)) redis.defineCommand('checkRateLimitBatch', { lua: SCRIPT });
  }

  async check(checks: LimitCheck[]): Promise<RateLimitResult> {
    const keys = checks.map((c) => `${this.keyPrefix}rl:${c.rule.name}:${c.subject}`);
    const now = Date.now();
    const { allowed, counts } = await new Promise<Counted>((resolve) => {
      this.queue.push({ keys, checks, now, resolve });
      if (!this.inFlight) this.sendQueued();
    });
    const result = summarize(checks, counts, allowed, now);
    if (!allowed) this.noteRefused(checks, now + result.retryAfterSeconds * 1000);
    return result;
  }

  /**
   * Whether a check of this subject was refused and its window has not reset yet: a route
   * then does not start its speculative read beside the check (route.ts, `prefetch`), so a
   * client hammering past its limit costs no more than the check.
   */
  refusedRecently(subject: string): boolean {
    return (this.refusedUntil.get(subject) ?? 0) > Date.now();
  }

  /** Remembers a refusal; entries whose window has reset are dropped here, so the map holds only current refusals. */
  private noteRefused(checks: LimitCheck[], until: number): void {
    const now = Date.now();
    for (const [subject, end] of this.refusedUntil) if (end <= now) this.refusedUntil.delete(subject);
    for (const c of checks) this.refusedUntil.set(c.subject, until);
  }

  /** Sends what is queued (up to MAX_CHECKS_PER_CALL) as one call; when it is answered, the next. */
  private sendQueued(): void {
    // The batch keeps the first MAX_CHECKS_PER_CALL, the queue the rest (usually none).
    const batch = this.queue;
    this.queue = batch.splice(MAX_CHECKS_PER_CALL);
    this.inFlight = true;
    const keys: string[] = [];
    const args: number[] = [];
    for (const p of batch) {
      keys.push(...p.keys);
      args.push(p.checks.length);
      for (const c of p.checks) args.push(c.rule.windowMs, c.rule.limit);
    }
    (this.redis as RedisWithLimitScript)
      .checkRateLimitBatch(keys.length, ...keys, ...args)
      .then(
        (raw) => {
          let at = 0;
          for (const p of batch) {
            const allowed = raw[at++] === 1;
            const counts = p.checks.map(() => ({ count: raw[at++] ?? 0, ttlMs: raw[at++] ?? 0 }));
            p.resolve({ allowed, counts });
          }
        },
        (err: unknown) => {
          this.warnFallback(err, Date.now());
          for (const p of batch) p.resolve(this.checkInMemory(p.keys, p.checks, p.now));
        },
      )
      .finally(() => {
        this.inFlight = false;
        if (this.queue.length > 0) this.sendQueued();
      });
  }

  private checkInMemory(keys: string[], checks: LimitCheck[], now: number): Counted {
    const windows = keys.map((key, i) => {
      let w = this.memory.get(key);
      if (!w || w.expiresAt <= now) {
        w = { count: 0, expiresAt: now + checks[i]!.rule.windowMs };
        this.memory.set(key, w);
      }
      return w;
    });
    const allowed = windows.every((w, i) => w.count < checks[i]!.rule.limit);
    if (allowed) for (const w of windows) w.count += 1;
    if (this.memory.size > 100_000) this.pruneMemory(now);
    return { allowed, counts: windows.map((w) => ({ count: w.count, ttlMs: w.expiresAt - now })) };
  }

  private pruneMemory(now: number) {
    for (const [k, w] of this.memory) if (w.expiresAt <= now) this.memory.delete(k);
  }

  private warnFallback(err: unknown, now: number) {
    if (now - this.lastWarnAt < 60_000) return;
    this.lastWarnAt = now;
    this.logger.warn({ err: (err as Error).message }, 'Redis unavailable: rate limits are counted in process memory');
  }
}

function summarize(
  checks: LimitCheck[],
  counts: Array<{ count: number; ttlMs: number }>,
  allowed: boolean,
  now: number,
): RateLimitResult {
  let tightest = 0;
  let tightestRemaining = Infinity;
  let longestBlockMs = 0;
  checks.forEach((c, i) => {
    const { count, ttlMs } = counts[i]!;
    const remaining = Math.max(0, c.rule.limit - count);
    if (remaining < tightestRemaining) {
      tightestRemaining = remaining;
      tightest = i;
    }
    if (count >= c.rule.limit) longestBlockMs = Math.max(longestBlockMs, ttlMs);
  });
  const rule = checks[tightest]!.rule;
  const ttlMs = counts[tightest]!.ttlMs;
  return {
    allowed,
    limit: rule.limit,
    remaining: tightestRemaining,
    resetAt: Math.ceil((now + ttlMs) / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil(longestBlockMs / 1000)),
  };
}

export function rateLimitHeaders(r: RateLimitResult): Record<string, string> {
  return {
    'X-RateLimit-Limit': String(r.limit),
    'X-RateLimit-Remaining': String(r.remaining),
    'X-RateLimit-Reset': String(r.resetAt),
  };
}

export function rateLimitExceeded(r: RateLimitResult): AppError {
  return new AppError(429, 'RATE_LIMIT_EXCEEDED', `Rate limit exceeded; retry in ${r.retryAfterSeconds} s`, {
    retryAfter: r.retryAfterSeconds,
    headers: { 'Retry-After': String(r.retryAfterSeconds) },
  });
}
