/**
 * Owns the per-endpoint throttle (`rate_limit`, deliveries per second): one Redis script
 * decides, for every worker process at once, whether an attempt to a throttled webhook may
 * send now, or how long it must wait. Redis's own clock decides, so the workers' clocks
 * never matter.
 *
 * Two keys per webhook:
 * - the gate: the earliest time of the next send. A send happens only when the gate has
 *   passed, and moves it one interval (1000 / rate_limit ms) on: consecutive sends are at
 *   least an interval apart, so no second ever holds more than `rate_limit` of them.
 * - the queue's tail: the next free turn. An attempt that must wait takes a turn (the tail
 *   moves one interval on), so waiters wake one interval apart, in arrival order, instead of
 *   all at once; a waiter back at its turn (`holdsTurn`) checks only the gate.
 *
 * Hand-written, not the API's fixed-window limiter (http/rate-limit.ts): a fixed window
 * allows twice the rate across a window boundary, and refuses without saying when to come
 * back; the waiting happens in the delivery workflow (a timer), not here.
 */
import type Redis from 'ioredis';
import type { Logger } from '../../logger';

const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local gate = tonumber(redis.call('GET', KEYS[1]) or '0')
local tail = tonumber(redis.call('GET', KEYS[2]) or '0')
local holds = ARGV[2] == '1'
if gate <= now and (holds or tail <= now) then
  redis.call('SET', KEYS[1], now + interval, 'PX', interval + 60000)
  if tail < now + interval then redis.call('SET', KEYS[2], now + interval, 'PX', interval + 60000) end
  return 0
end
if holds then return gate - now end
local turn = math.max(now, tail, gate)
redis.call('SET', KEYS[2], turn + interval, 'PX', turn + interval - now + 60000)
return turn - now
`;

/** While Redis cannot be reached a throttled webhook sends nothing; its attempts look again this much later. */
export const THROTTLE_UNAVAILABLE_WAIT_MS = 10_000;

type RedisWithThrottle = Redis & { webhookThrottle(gate: string, tail: string, intervalMs: number, holds: string): Promise<number> };

export class WebhookThrottle {
  private lastWarnAt = 0;

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly logger?: Logger,
  ) {
    if (!('webhookThrottle' in redis)) redis.defineCommand('webhookThrottle', { numberOfKeys: 2, lua: SCRIPT });
  }

  /** Whole milliseconds between two sends, rounded up: never above the rate. */
  static intervalMs(ratePerSecond: number): number {
    return Math.ceil(1000 / ratePerSecond);
  }

  /**
   * 0: send now (the send is counted). Otherwise the wait in ms before asking again with
   * `holdsTurn` (the turn is kept for the caller).
   */
  async acquire(webhookId: string, ratePerSecond: number, holdsTurn: boolean): Promise<number> {
    const key = `${this.keyPrefix}webhook-throttle:${webhookId}`;
    try {
      return await (this.redis as RedisWithThrottle).webhookThrottle(`${key}:gate`, `${key}:tail`, WebhookThrottle.intervalMs(ratePerSecond), holdsTurn ? '1' : '0');
    } catch (err) {
      if (Date.now() - this.lastWarnAt > 60_000) {
        this.lastWarnAt = Date.now();
        this.logger?.warn({ err }, 'webhook throttle: Redis unavailable; throttled webhooks wait');
      }
      return THROTTLE_UNAVAILABLE_WAIT_MS;
    }
  }
}
