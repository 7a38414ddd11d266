/** Secrets at rest (src/secrets.ts): AES-256-GCM under SECRETS_ENCRYPTION_KEY, and the key as configuration. */
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../../src/config';
import { generateSecretsKey, parseSecretsKey, SecretBox, secretBoxOf } from '../../src/secrets';

describe('secret box', () => {
  const box = new SecretBox(randomBytes(32));

  it('seals to a versioned ciphertext that does not contain the secret and opens back to it', () => {
    const sealed = box.seal('EAAG-token-123');
    expect(sealed.startsWith('v1:')).toBe(true);
    expect(sealed).not.toContain('EAAG');
    expect(box.seal('EAAG-token-123')).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed)).toBe('EAAG-token-123');
  });

  it('refuses a ciphertext sealed under another key or altered', () => {
    const sealed = box.seal('secret');
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw.writeUInt8(raw.readUInt8(raw.length - 1) ^ 1, raw.length - 1);
    expect(() => box.open(`v1:${raw.toString('base64')}`)).toThrow();
    expect(() => box.open('plain')).toThrow('not a sealed secret');
  });

  it('without a key says which setting is missing', () => {
    expect(() => new SecretBox(undefined).seal('x')).toThrow('SECRETS_ENCRYPTION_KEY');
  });
});

describe('SECRETS_ENCRYPTION_KEY', () => {
  it('takes 32 bytes as base64 or hex, nothing else', () => {
    expect(parseSecretsKey(generateSecretsKey())?.length).toBe(32);
    expect(parseSecretsKey(randomBytes(32).toString('hex'))?.length).toBe(32);
    expect(parseSecretsKey(randomBytes(16).toString('base64'))).toBeUndefined();
    expect(parseSecretsKey('not a key')).toBeUndefined();
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: 'short' })).toThrow(ConfigError);
  });

  it('is required in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRETS_ENCRYPTION_KEY: required/);
    const config = loadConfig({ NODE_ENV: 'production', SECRETS_ENCRYPTION_KEY: generateSecretsKey() });
    expect(secretBoxOf(config).open(secretBoxOf(config).seal('x'))).toBe('x');
  });
});
