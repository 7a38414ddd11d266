/**
 * The pure rules of webhook delivery: the RetryPolicy built from a webhook's retry_policy
 * (never waiting more than 30 s), which answers count, Retry-After parsing, forbidden
 * addresses, and the signature formats.
 */
import { createHmac } from 'node:crypto';
import {
  ATTEMPT_MARGIN_MS,
  buildDeliveryRetryPolicy,
  delayAfterRetryAfter,
  deliveryWorkflowId,
  deliveryWorkflowTaskTimeoutMs,
  retryDelayMs,
} from '../../temporal/webhooks.shared';
import { classifyAnswer, parseRetryAfter } from '../../src/modules/webhooks/webhook.sender';
import { checkUrlSyntax, isForbiddenAddress } from '../../src/modules/webhooks/webhook-target';
import { signBody, standardWebhookSignature } from '../../src/http/signature';
import { deliveryHeaders } from '../../src/modules/webhooks/webhook.signature';

const durationMs = (d: unknown) => (typeof d === 'number' ? d : Number.NaN);

describe('buildDeliveryRetryPolicy', () => {
  test('max_retries 10, retry_delay_ms 30000: 11 attempts, and no wait ever exceeds 30 s', () => {
    const p = buildDeliveryRetryPolicy({ max_retries: 10, retry_delay_ms: 30_000 });
    expect(p.maximumAttempts).toBe(11);
    expect(p.backoffCoefficient).toBe(2);
    expect(durationMs(p.initialInterval)).toBe(30_000);
    expect(durationMs(p.maximumInterval)).toBe(30_000);
    // The waits before retries 1..10, as stated (not recomputed here): always the 30 s cap.
    expect(Array.from({ length: 10 }, (_, i) => retryDelayMs({ max_retries: 10, retry_delay_ms: 30_000 }, i + 1))).toEqual(Array(10).fill(30_000));
    // A shorter delay doubles up to the cap and stays there.
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs({ max_retries: 10, retry_delay_ms: 5_000 }, n))).toEqual([5_000, 10_000, 20_000, 30_000, 30_000, 30_000]);
  });

  test('defaults grow 1 s, 2 s, 4 s over 4 attempts; final answers are non-retryable by type', () => {
    const policy = { max_retries: 3, retry_delay_ms: 1000 };
    const p = buildDeliveryRetryPolicy(policy);
    expect(p.maximumAttempts).toBe(4);
    expect(durationMs(p.initialInterval)).toBe(1000);
    expect([1, 2, 3].map((n) => retryDelayMs(policy, n))).toEqual([1000, 2000, 4000]);
    expect(p.nonRetryableErrorTypes).toEqual(['WebhookDeliveryRejected']);
    expect(buildDeliveryRetryPolicy({ max_retries: 0, retry_delay_ms: 100 }).maximumAttempts).toBe(1);
  });

  test('after the local first attempt, the task-queue retries continue the schedule: 2 s, 4 s, and 4 attempts in all', () => {
    const policy = { max_retries: 3, retry_delay_ms: 1000 };
    const rest = buildDeliveryRetryPolicy(policy, 1);
    expect(rest.maximumAttempts).toBe(3);
    expect(durationMs(rest.initialInterval)).toBe(retryDelayMs(policy, 2));
    expect(durationMs(rest.initialInterval) * rest.backoffCoefficient!).toBe(retryDelayMs(policy, 3));
    expect(durationMs(buildDeliveryRetryPolicy({ max_retries: 10, retry_delay_ms: 30_000 }, 1).initialInterval)).toBe(30_000);
  });

  test('the workflow task outlives the local attempt by a fifth, so the SDK never has to extend it, within Temporal\'s 120 s cap', () => {
    for (const http of [100, 2_000, 10_000, 60_000]) {
      const timeout = deliveryWorkflowTaskTimeoutMs(http);
      expect(timeout * 0.8).toBeGreaterThan(http + ATTEMPT_MARGIN_MS);
      expect(timeout).toBeLessThanOrEqual(120_000);
      // The tests' shorter margin (WEBHOOK_ATTEMPT_MARGIN_MS) keeps the same rule.
      for (const margin of [500, 2_000]) expect(deliveryWorkflowTaskTimeoutMs(http, margin) * 0.8).toBeGreaterThan(http + margin);
    }
  });

  test('a 429 Retry-After is honoured up to the cap and never shortens the policy delay', () => {
    const policy = { max_retries: 3, retry_delay_ms: 1000 };
    expect(delayAfterRetryAfter(policy, 1, 5_000)).toBe(5_000);
    expect(delayAfterRetryAfter(policy, 1, 3_600_000)).toBe(30_000);
    expect(delayAfterRetryAfter(policy, 3, 0)).toBe(4_000);
  });

  test('the delivery workflow id is derived from the event and the webhook', () => {
    expect(deliveryWorkflowId('evt_1', 'wh_2')).toBe('webhook-delivery:evt_1:wh_2');
  });
});

test('which answers count', () => {
  const table: Array<[number, string]> = [
    [200, 'delivered'], [201, 'delivered'], [204, 'delivered'],
    [301, 'retry'], [302, 'retry'], [307, 'retry'],
    [400, 'final'], [401, 'final'], [403, 'final'], [404, 'final'], [422, 'final'],
    [408, 'retry'], [429, 'retry'], [410, 'gone'],
    [500, 'retry'], [502, 'retry'], [503, 'retry'], [504, 'retry'],
  ];
  for (const [status, cls] of table) expect([status, classifyAnswer(status)]).toEqual([status, cls]);
});

test('Retry-After as seconds or an HTTP date', () => {
  expect(parseRetryAfter('3')).toBe(3000);
  expect(parseRetryAfter(undefined)).toBeUndefined();
  expect(parseRetryAfter('soon')).toBeUndefined();
  const now = Date.parse('2026-01-01T00:00:00Z');
  expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000);
});

test('forbidden addresses', () => {
  const forbidden = ['127.0.0.1', '127.9.9.9', '10.0.0.1', '172.16.5.4', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '100.100.100.200', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', '::ffff:127.0.0.1', '::ffff:8.8.8.8',
    'fe80::1', 'fc00::1', 'fd00:ec2::254', 'ff02::1', '64:ff9b::7f00:1',
    // documentation (RFC 5737, 3849, 9637) and the rest of the IANA special-purpose registries
    '192.0.2.1', '198.51.100.200', '203.0.113.7', '192.0.0.9', '192.31.196.1', '192.52.193.1', '192.88.99.1', '192.175.48.1',
    '198.18.0.1', '240.0.0.1', '2001:db8::1', '3fff::1', '2001::1', '2001:2::1', '2001:10::1', '2002:0808:0808::1',
    '2620:4f:8000::1', '100::1', '100:0:0:1::1', '5f00::1'];
  const allowed = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '192.0.3.1', '198.51.101.1', '203.0.114.1', '2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450::1'];
  for (const a of forbidden) expect([a, isForbiddenAddress(a)]).toEqual([a, true]);
  for (const a of allowed) expect([a, isForbiddenAddress(a)]).toEqual([a, false]);
});

test('URL syntax: HTTPS only, no credentials, literal forbidden hosts refused unless private networks are allowed', () => {
  const kind = (u: string, allow = false) => {
    const r = checkUrlSyntax(u, allow);
    return 'url' in r ? 'ok' : r.kind;
  };
  expect(kind('https://hooks.example.com/x')).toBe('ok');
  expect(kind('http://hooks.example.com/x')).toBe('invalid');
  expect(kind('ftp://hooks.example.com/x')).toBe('invalid');
  expect(kind('not a url')).toBe('invalid');
  expect(kind('https://user:pw@hooks.example.com/x')).toBe('invalid');
  expect(kind('https://127.0.0.1/x')).toBe('forbidden');
  expect(kind('https://[::ffff:10.0.0.1]/x')).toBe('forbidden');
  expect(kind('https://localhost/x')).toBe('forbidden');
  expect(kind('https://metadata.google.internal/x')).toBe('forbidden');
  expect(kind('https://127.0.0.1/x', true)).toBe('ok');
});

test('signatures: hex HMAC of the exact body and the Standard Webhooks v1 signature, keyed with the UTF-8 secret', () => {
  const secret = 'sécret-with-ünicode-1234';
  const body = '{"id":"evt_1","type":"workflow.completed"}';
  expect(signBody(secret, body)).toBe(createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex'));
  expect(standardWebhookSignature(secret, 'evt_1', 1700000000, body)).toBe(
    `v1,${createHmac('sha256', Buffer.from(secret, 'utf8')).update(`evt_1.1700000000.${body}`).digest('base64')}`,
  );
  const h = deliveryHeaders({ secret, eventId: 'evt_1', attempt: 3, body, now: new Date(1700000000_000) });
  expect(h).toMatchObject({
    'content-type': 'application/json',
    'x-service-event-id': 'evt_1',
    'x-service-delivery-attempt': '3',
    'webhook-id': 'evt_1',
    'webhook-timestamp': '1700000000',
  });
});
