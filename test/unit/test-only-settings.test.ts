/**
 * The settings that exist for the test suite: FORM_TIMEOUT_MIN_SECONDS lowers the 10 s form
 * timeout minimum outside production only, and a production process refuses to start with
 * it; the same holds for TEMPORAL_STICKY_QUEUE_TIMEOUT_MS (the crash tests' short
 * sticky-queue timeout) and WEBHOOK_ATTEMPT_MARGIN_MS (the webhook crash test's shorter
 * delivery task timeout); TEMPORAL_WORKFLOW_BUNDLE_PATH is optional (unset, the worker bundles at start).
 */
import { ConfigError, customerServiceWindowMsOf, deliveryTimingOf, formTimeoutMinSeconds, loadConfig } from '../../src/config';
import { FormNode } from '../../src/modules/workflows/workflow.schemas';

const form = (timeout_seconds: number) => ({ id: 'ask', type: 'form', timeout_seconds, fields: [{ name: 'phone', type: 'phone', label: 'Number?' }] });

describe('FORM_TIMEOUT_MIN_SECONDS', () => {
  it('is 10 s unless lowered, lowered only outside production, and only to 1–10', () => {
    expect(formTimeoutMinSeconds({})).toBe(10);
    expect(formTimeoutMinSeconds({ FORM_TIMEOUT_MIN_SECONDS: '2' })).toBe(2);
    expect(formTimeoutMinSeconds({ NODE_ENV: 'test', FORM_TIMEOUT_MIN_SECONDS: '1' })).toBe(1);
    expect(formTimeoutMinSeconds({ NODE_ENV: 'production', FORM_TIMEOUT_MIN_SECONDS: '1' })).toBe(10);
    for (const bad of ['0', '11', '2.5', 'soon']) expect(formTimeoutMinSeconds({ FORM_TIMEOUT_MIN_SECONDS: bad })).toBe(10);
  });

  it('a production configuration with it is refused, naming the variable; elsewhere it is validated', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', FORM_TIMEOUT_MIN_SECONDS: '1' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production', FORM_TIMEOUT_MIN_SECONDS: '1' })).toThrow(/FORM_TIMEOUT_MIN_SECONDS/);
    // Production also requires its secrets key (src/secrets.ts).
    expect(loadConfig({ NODE_ENV: 'production', SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }).FORM_TIMEOUT_MIN_SECONDS).toBeUndefined();
    expect(loadConfig({ FORM_TIMEOUT_MIN_SECONDS: '3' }).FORM_TIMEOUT_MIN_SECONDS).toBe(3);
    expect(() => loadConfig({ FORM_TIMEOUT_MIN_SECONDS: '11' })).toThrow(/FORM_TIMEOUT_MIN_SECONDS/);
  });

  it('without it (this file does not set it), a form timeout under 10 s is refused and 10 s is accepted', () => {
    const refused = FormNode.safeParse(form(9));
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.path).toEqual(['timeout_seconds']);
    expect(FormNode.safeParse(form(10)).success).toBe(true);
  });
});

describe('TEMPORAL_STICKY_QUEUE_TIMEOUT_MS', () => {
  it('is unset by default (the SDK keeps its 10 s), validated when set, and refused in production, naming the variable', () => {
    expect(loadConfig({}).TEMPORAL_STICKY_QUEUE_TIMEOUT_MS).toBeUndefined();
    expect(loadConfig({ TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: '1000' }).TEMPORAL_STICKY_QUEUE_TIMEOUT_MS).toBe(1000);
    for (const bad of ['50', '10001', 'soon']) expect(() => loadConfig({ TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: bad })).toThrow(/TEMPORAL_STICKY_QUEUE_TIMEOUT_MS/);
    expect(() => loadConfig({ NODE_ENV: 'production', TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: '1000' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production', TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: '1000' })).toThrow(/TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: a test-only setting/);
  });
});

describe('WEBHOOK_ATTEMPT_MARGIN_MS', () => {
  it('is unset by default (deliveries carry no margin: the workflow keeps its 5 s), validated when set, and refused in production', () => {
    expect(deliveryTimingOf(loadConfig({}))).toEqual({ httpTimeoutMs: 10_000 });
    expect(deliveryTimingOf(loadConfig({ WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_ATTEMPT_MARGIN_MS: '2000' }))).toEqual({ httpTimeoutMs: 2000, attemptMarginMs: 2000 });
    for (const bad of ['499', '5001', 'soon']) expect(() => loadConfig({ WEBHOOK_ATTEMPT_MARGIN_MS: bad })).toThrow(/WEBHOOK_ATTEMPT_MARGIN_MS/);
    expect(() => loadConfig({ NODE_ENV: 'production', WEBHOOK_ATTEMPT_MARGIN_MS: '2000' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production', WEBHOOK_ATTEMPT_MARGIN_MS: '2000' })).toThrow(/WEBHOOK_ATTEMPT_MARGIN_MS: a test-only setting/);
  });
});

describe('CUSTOMER_SERVICE_WINDOW_SECONDS', () => {
  it("is Meta's 24 hours unless shortened, and a production configuration with it is refused", () => {
    expect(customerServiceWindowMsOf(loadConfig({}))).toBe(24 * 3_600_000);
    expect(customerServiceWindowMsOf(loadConfig({ CUSTOMER_SERVICE_WINDOW_SECONDS: '3' }))).toBe(3000);
    expect(() => loadConfig({ NODE_ENV: 'production', CUSTOMER_SERVICE_WINDOW_SECONDS: '3' })).toThrow(/CUSTOMER_SERVICE_WINDOW_SECONDS/);
    expect(() => loadConfig({ CUSTOMER_SERVICE_WINDOW_SECONDS: '0' })).toThrow(/CUSTOMER_SERVICE_WINDOW_SECONDS/);
    expect(() => loadConfig({ CUSTOMER_SERVICE_WINDOW_SECONDS: String(24 * 3600 + 1) })).toThrow(/CUSTOMER_SERVICE_WINDOW_SECONDS/);
  });
});

describe('TEMPORAL_WORKFLOW_BUNDLE_PATH', () => {
  it('is optional and, when set, must not be empty', () => {
    expect(loadConfig({}).TEMPORAL_WORKFLOW_BUNDLE_PATH).toBeUndefined();
    expect(loadConfig({ TEMPORAL_WORKFLOW_BUNDLE_PATH: '/tmp/workflows.js' }).TEMPORAL_WORKFLOW_BUNDLE_PATH).toBe('/tmp/workflows.js');
    expect(() => loadConfig({ TEMPORAL_WORKFLOW_BUNDLE_PATH: '' })).toThrow(/TEMPORAL_WORKFLOW_BUNDLE_PATH/);
  });
});
