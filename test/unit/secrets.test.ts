/** Secrets at rest (src/secrets.ts): AES-256-GCM under a keyring, bound to their place, and the keys as configuration. */
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../src/config';
import { generateSecretsKey, keyringOf, parseKeyring, parseSecretsKey, SecretBox, SecretKeyring, sealedAt } from '../../src/secrets';

const key = (id: string) => ({ id, key: randomBytes(32) });
const place = sealedAt.webhookSecret('wh_1');

describe('secret keyring', () => {
  const k1 = key('k1');
  const ring = new SecretKeyring([k1]);

  it('seals to a ciphertext naming its key that does not contain the secret, and opens back to it', () => {
    const sealed = ring.seal('EAAG-token-123', place);
    expect(sealed.startsWith('v2:k1:')).toBe(true);
    expect(sealed).not.toContain('EAAG');
    expect(ring.seal('EAAG-token-123', place)).not.toBe(sealed); // a fresh IV each time
    expect(ring.open(sealed, place)).toBe('EAAG-token-123');
    expect(ring.isCurrent(sealed)).toBe(true);
  });

  it('does not open a value moved to another row, column or table', () => {
    const sealed = ring.seal('secret', place);
    expect(() => ring.open(sealed, sealedAt.webhookSecret('wh_2'))).toThrow();
    expect(() => ring.open(sealed, sealedAt.webhookPreviousSecret('wh_1'))).toThrow();
    expect(() => ring.open(sealed, sealedAt.triggerSecret('wh_1'))).toThrow();
    const token = ring.seal('tok', sealedAt.channelSecret('chc_1', 'access_token'));
    expect(() => ring.open(token, sealedAt.channelSecret('chc_1', 'app_secret'))).toThrow();
    expect(ring.open(token, sealedAt.channelSecret('chc_1', 'access_token'))).toBe('tok');
  });

  it('refuses a value sealed under a key it does not hold, or altered, naming the key', () => {
    const sealed = ring.seal('secret', place);
    expect(() => new SecretKeyring([key('k2')]).open(sealed, place)).toThrow(/key "k1".*SECRETS_ENCRYPTION_KEYS/);
    // Same id, another key: the tag fails.
    expect(() => new SecretKeyring([key('k1')]).open(sealed, place)).toThrow();
    const raw = Buffer.from(sealed.slice('v2:k1:'.length), 'base64');
    raw.writeUInt8(raw.readUInt8(raw.length - 1) ^ 1, raw.length - 1);
    expect(() => ring.open(`v2:k1:${raw.toString('base64')}`, place)).toThrow();
    expect(() => ring.open('plain', place)).toThrow('not a sealed secret');
  });

  it('seals with the first key and opens with any key of the ring', () => {
    const k2 = key('k2');
    const old = new SecretKeyring([k1, k2]).seal('s', place);
    const rolled = new SecretKeyring([k2, k1]);
    expect(rolled.open(old, place)).toBe('s');
    expect(rolled.isCurrent(old)).toBe(false);
    expect(rolled.seal('s', place).startsWith('v2:k2:')).toBe(true);
  });

  it('without a key says which settings are missing', () => {
    expect(() => new SecretKeyring([]).seal('x', place)).toThrow('SECRETS_ENCRYPTION_KEYS');
    expect(() => new SecretKeyring([]).open('v2:k1:AAAA', place)).toThrow('SECRETS_ENCRYPTION_KEYS');
  });
});

describe('values sealed before the keyring (v1)', () => {
  // Sealed by the code before the keyring (one SECRETS_ENCRYPTION_KEY, no key id, no
  // associated data) under this test-only key, and committed here as it printed them.
  const LEGACY_KEY = 'AQgPFh0kKzI5QEdOVVxjanF4f4aNlJuiqbC3vsXM09o=';
  const LEGACY: Array<[clear: string, sealed: string, where: ReturnType<typeof sealedAt.webhookSecret>]> = [
    ['whsec-legacy-webhook-secret-0001', 'v1:s3Zmiko1a2eGmwbJQVxoV/rI6y0+6A3xuCNyXbt99aEEU23yVuh75AH8hZi9TGDgY8Jm+rkw33RcR5rA', sealedAt.webhookSecret('wh_legacy')],
    ['whsec-legacy-previous-secret-002', 'v1:fczlitPRLm5zv/r98/m2k1CZ6r4WxFFoIPS0BSdt0zXq1A91NXvR4VhjHPZtcyW2zgfEss+zKe6NurDp', sealedAt.webhookPreviousSecret('wh_legacy')],
    ['trigger-legacy-secret-000000003', 'v1:ZWiyLtVz84RsfjOAuDq+XhrdXG3ER2YsFtsivqG0/zHV5604YK1OOe8VMsFCdhQNldtDeaPVpH+3wZs=', sealedAt.triggerSecret('trg_legacy')],
    ['EAAG-legacy-access-token', 'v1:OsSuDW2gLgK4pQDxNPrDterVBctmNjaLM0qCgkyHGjyvsv+F8QnmWFFjLAHsM95TKOFpow==', sealedAt.channelSecret('chc_legacy', 'access_token')],
    ['legacy-app-secret', 'v1:F+R4KDqwHHN2ERkZjvlYxk44gxv+E5XM1qpquo3eWxKihhszonV8ejqU19im', sealedAt.channelSecret('chc_legacy', 'app_secret')],
    ['legacy-verify-token', 'v1:2zWE76o+VKRpzBUIvlyqSyipOhO/rWrRt41n9Uy/KIY0DjaBo1LdC+nLoJX9YHg=', sealedAt.channelSecret('chc_legacy', 'verify_token')],
  ];

  it.each(LEGACY)('%s opens under the same key as SECRETS_ENCRYPTION_KEY, and in any position of SECRETS_ENCRYPTION_KEYS', (clear, sealed, where) => {
    expect(keyringOf(loadConfig({ SECRETS_ENCRYPTION_KEY: LEGACY_KEY })).open(sealed, where)).toBe(clear);
    const ring = keyringOf(loadConfig({ SECRETS_ENCRYPTION_KEYS: `k2:${generateSecretsKey()},old:${LEGACY_KEY}` }));
    expect(ring.open(sealed, where)).toBe(clear);
    expect(ring.isCurrent(sealed)).toBe(false);
    expect(() => keyringOf(loadConfig({ SECRETS_ENCRYPTION_KEYS: `k2:${generateSecretsKey()}` })).open(sealed, where)).toThrow(/opens under no key/);
  });

  it('the migration that sealed clear rows still writes v1, which the keyring opens', () => {
    const legacy = randomBytes(32);
    const sealed = new SecretBox(legacy).seal('clear-before');
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(new SecretKeyring([{ id: 'default', key: legacy }]).open(sealed, place)).toBe('clear-before');
  });
});

describe('SECRETS_ENCRYPTION_KEYS and SECRETS_ENCRYPTION_KEY', () => {
  it('take 32-byte keys as base64 or hex, nothing else', () => {
    expect(parseSecretsKey(generateSecretsKey())?.length).toBe(32);
    expect(parseSecretsKey(randomBytes(32).toString('hex'))?.length).toBe(32);
    expect(parseSecretsKey(randomBytes(16).toString('base64'))).toBeUndefined();
    expect(parseSecretsKey('not a key')).toBeUndefined();
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: 'short' })).toThrow(ConfigError);
  });

  it('read the keyring as id:key pairs, the sealing key first, and name what is wrong without echoing a key', () => {
    const [a, b] = [generateSecretsKey(), randomBytes(32).toString('hex')];
    expect((parseKeyring(`k2:${a}, k1:${b}`) as Array<{ id: string }>).map((k) => k.id)).toEqual(['k2', 'k1']);
    expect(keyringOf(loadConfig({ SECRETS_ENCRYPTION_KEYS: `k2:${a},k1:${b}` })).sealingKeyId).toBe('k2');
    expect(keyringOf(loadConfig({ SECRETS_ENCRYPTION_KEY: a })).sealingKeyId).toBe('default');
    for (const bad of [a, `k1:${a},k1:${b}`, 'k1:short', `bad id:${a}`, ',']) {
      expect(() => loadConfig({ SECRETS_ENCRYPTION_KEYS: bad })).toThrow(/SECRETS_ENCRYPTION_KEYS: /);
      try {
        loadConfig({ SECRETS_ENCRYPTION_KEYS: bad });
      } catch (err) {
        expect((err as Error).message).not.toContain(a);
      }
    }
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEYS: `k1:${a}`, SECRETS_ENCRYPTION_KEY: a })).toThrow(/not both/);
  });

  it('are required in production, and wherever the caller needs them', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_ENCRYPTION_KEYS: required when NODE_ENV=production/);
    expect(() => loadConfig({}, { requireSecretsKey: true })).toThrow(/SECRETS_ENCRYPTION_KEYS: required \(/);
    expect(loadConfig({}).SECRETS_ENCRYPTION_KEYS).toBeUndefined();
    const config = loadConfig({ NODE_ENV: 'production', SECRETS_ENCRYPTION_KEYS: `k1:${generateSecretsKey()}` });
    expect(keyringOf(config).open(keyringOf(config).seal('x', place), place)).toBe('x');
  });
});
