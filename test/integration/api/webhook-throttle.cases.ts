/**
 * The per-webhook throttle's Redis script against the real Redis: turns are handed out one
 * interval apart in arrival order, a holder sends only once the gate has passed, the gate
 * never lets two sends closer than an interval, and webhooks do not share a throttle.
 */
import { randomBytes } from 'node:crypto';
import { createRedis } from '../../../src/services';
import { WebhookThrottle } from '../../../src/modules/webhooks/webhook-throttle';
import { waitFor } from '../../helpers/wait';

const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const throttle = new WebhookThrottle(redis, `wfa-test-throttle-${randomBytes(4).toString('hex')}:`);
afterAll(() => redis.quit());

beforeAll(() => waitFor(async () => redis.status === 'ready', 'redis'));

test('first sends, the next ones queue one interval apart; a holder at its turn sends', async () => {
  const hook = `wh_${randomBytes(6).toString('hex')}`;
  // 5/s: an interval of 200 ms.
  const start = Date.now();
  const waits: number[] = [];
  for (let i = 0; i < 4; i++) waits.push(await throttle.acquire(hook, 5, false));
  const elapsed = Date.now() - start;
  expect(waits[0]).toBe(0);
  // Each later arrival's turn is one interval after the one before, less the time the calls took.
  for (let i = 1; i < 4; i++) {
    expect(waits[i]).toBeGreaterThanOrEqual(200 * i - elapsed - 1);
    expect(waits[i]).toBeLessThanOrEqual(200 * i);
  }
  // At its turn a holder sends; that send moves the gate: a holder right after must wait.
  await new Promise((r) => setTimeout(r, waits[1]));
  expect(await throttle.acquire(hook, 5, true)).toBe(0);
  expect(await throttle.acquire(hook, 5, true)).toBeGreaterThan(0);
  // Another webhook is not held up by this one's queue.
  expect(await throttle.acquire(`${hook}_other`, 5, false)).toBe(0);
});

test('an interval is rounded up, so the rate is never exceeded', () => {
  expect(WebhookThrottle.intervalMs(5)).toBe(200);
  expect(WebhookThrottle.intervalMs(3)).toBe(334);
  expect(WebhookThrottle.intervalMs(1000)).toBe(1);
});
