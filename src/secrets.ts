/**
 * Owns secrets at rest: every secret the service must read back (channel tokens and app
 * secrets, verify tokens) is stored sealed with AES-256-GCM under SECRETS_ENCRYPTION_KEY,
 * never in clear. node:crypto's GCM is the well-kept implementation; this file only fixes
 * the format around it.
 *
 * Format: `v1:` + base64(12-byte IV ‖ 16-byte tag ‖ ciphertext). The version prefix lets a
 * later key rotation (`v2:` under a new key, both keys readable meanwhile) tell the two
 * apart without a column of its own.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A 32-byte key from its base64 (44 characters) or hex (64 characters) form; undefined when it is neither. */
export function parseSecretsKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(trimmed)) {
    const key = Buffer.from(trimmed, 'base64');
    return key.length === 32 ? key : undefined;
  }
  return undefined;
}

/** A fresh key in the form SECRETS_ENCRYPTION_KEY takes (base64). */
export const generateSecretsKey = (): string => randomBytes(32).toString('base64');

export class SecretBox {
  readonly #key: Buffer | undefined;

  /** `key`: the parsed SECRETS_ENCRYPTION_KEY; without one, sealing and opening throw a clear error. */
  constructor(key: Buffer | undefined) {
    this.#key = key;
  }

  #requireKey(): Buffer {
    if (!this.#key) throw new Error('SECRETS_ENCRYPTION_KEY is not set: secrets cannot be stored or read (npm start generates one for development)');
    return this.#key;
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#requireKey(), iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return VERSION + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** Throws when `sealed` is not of this format or was not sealed with this key (GCM's tag fails). */
  open(sealed: string): string {
    if (!SecretBox.isSealed(sealed)) throw new Error('not a sealed secret');
    const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', this.#requireKey(), raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }

  static isSealed(value: string): boolean {
    return value.startsWith(VERSION);
  }
}

const boxes = new WeakMap<object, SecretBox>();

/** The box of this configuration's SECRETS_ENCRYPTION_KEY (one per configuration object). */
export function secretBoxOf(config: { readonly SECRETS_ENCRYPTION_KEY?: string | undefined }): SecretBox {
  let box = boxes.get(config);
  if (!box) {
    box = new SecretBox(config.SECRETS_ENCRYPTION_KEY ? parseSecretsKey(config.SECRETS_ENCRYPTION_KEY) : undefined);
    boxes.set(config, box);
  }
  return box;
}

/**
 * The one way a secret column is written and read back (webhook and trigger secrets, channel
 * credentials): sealed under this configuration's SECRETS_ENCRYPTION_KEY.
 */
export const sealSecret = (config: { readonly SECRETS_ENCRYPTION_KEY?: string | undefined }, plaintext: string): string => secretBoxOf(config).seal(plaintext);
export const openSecret = (config: { readonly SECRETS_ENCRYPTION_KEY?: string | undefined }, sealed: string): string => secretBoxOf(config).open(sealed);
