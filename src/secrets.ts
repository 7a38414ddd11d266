/**
 * Owns secrets at rest: every secret the service must read back (channel tokens and app
 * secrets, verify tokens, webhook and trigger signing secrets) is stored sealed with
 * AES-256-GCM, never in clear. node:crypto's GCM is the well-kept implementation; this file
 * only fixes the format around it and the keyring.
 *
 * The keyring (SECRETS_ENCRYPTION_KEYS, `id:key,id:key`) holds every key a stored value may
 * be sealed under; the first one seals. Format:
 * - `v2:<key id>:` + base64(12-byte IV ‖ 16-byte tag ‖ ciphertext), the table, column and
 *   row id as GCM's associated data: a value copied to another row or column does not open.
 * - `v1:` + base64(IV ‖ tag ‖ ciphertext): sealed before the keyring, by the one key of
 *   SECRETS_ENCRYPTION_KEY, without associated data. Still opened (by whichever key of the
 *   ring it was sealed under); `npm run cli -- secrets rotate` re-seals them as `v2:`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const V1 = 'v1:';
const V2 = 'v2:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** The id SECRETS_ENCRYPTION_KEY's single key has in the keyring. */
export const SINGLE_KEY_ID = 'default';

/** Where a sealed value is stored: bound to it as associated data. */
export interface SecretPlace {
  readonly table: string;
  readonly column: string;
  readonly rowId: string;
}

export const secretPlace = (table: string, column: string, rowId: string): SecretPlace => ({ table, column, rowId });

export interface SecretsKey {
  readonly id: string;
  readonly key: Buffer;
}

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

/**
 * SECRETS_ENCRYPTION_KEYS: `id:key` pairs separated by commas (or new lines), the sealing key
 * first. Returns the keys, or what is wrong with the text (never the keys themselves).
 */
export function parseKeyring(text: string): SecretsKey[] | string {
  const entries = text.split(/[,\n]/).map((e) => e.trim()).filter((e) => e !== '');
  if (entries.length === 0) return 'holds no key: expected id:key[,id:key…], the sealing key first';
  const keys: SecretsKey[] = [];
  for (const [i, entry] of entries.entries()) {
    const colon = entry.indexOf(':');
    const id = colon < 0 ? '' : entry.slice(0, colon);
    if (!KEY_ID.test(id)) return `entry ${i + 1}: expected id:key, the id of 1–32 letters, digits, - or _`;
    const key = parseSecretsKey(entry.slice(colon + 1));
    if (!key) return `key "${id}": must be 32 bytes, base64 (44 characters) or hex (64 characters)`;
    if (keys.some((k) => k.id === id)) return `key id "${id}" appears twice`;
    keys.push({ id, key });
  }
  return keys;
}

/** A fresh key in the form SECRETS_ENCRYPTION_KEY takes (base64). */
export const generateSecretsKey = (): string => randomBytes(32).toString('base64');

function encrypt(key: Buffer, plaintext: string, aad?: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  if (aad) cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

/** Throws when the tag fails: another key, another place, or an altered value. */
function decrypt(key: Buffer, base64: string, aad?: Buffer): string {
  const raw = Buffer.from(base64, 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed secret is truncated');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

/** JSON keeps the three parts apart whatever they contain. */
const aadOf = (place: SecretPlace): Buffer => Buffer.from(JSON.stringify([place.table, place.column, place.rowId]), 'utf8');

const MISSING_KEY =
  'SECRETS_ENCRYPTION_KEYS (or SECRETS_ENCRYPTION_KEY) is not set: secrets cannot be stored or read (npm start generates one for development)';

export class SecretKeyring {
  readonly #keys: readonly SecretsKey[];

  /** `keys`: the sealing key first; without any, sealing and opening throw a clear error. */
  constructor(keys: readonly SecretsKey[]) {
    this.#keys = keys;
  }

  /** The id of the key that seals, undefined without keys. */
  get sealingKeyId(): string | undefined {
    return this.#keys[0]?.id;
  }

  seal(plaintext: string, place: SecretPlace): string {
    const sealing = this.#keys[0];
    if (!sealing) throw new Error(MISSING_KEY);
    return `${V2}${sealing.id}:${encrypt(sealing.key, plaintext, aadOf(place))}`;
  }

  /** Throws when `sealed` is not a sealed value, its key is not in the ring, or it was sealed for another place. */
  open(sealed: string, place: SecretPlace): string {
    if (this.#keys.length === 0) throw new Error(MISSING_KEY);
    if (sealed.startsWith(V2)) {
      const rest = sealed.slice(V2.length);
      const colon = rest.indexOf(':');
      const id = rest.slice(0, colon);
      const key = this.#keys.find((k) => k.id === id);
      if (colon < 0 || !key) throw new Error(`secret sealed under key "${id}", which the keyring (SECRETS_ENCRYPTION_KEYS) does not hold`);
      return decrypt(key.key, rest.slice(colon + 1), aadOf(place));
    }
    if (sealed.startsWith(V1)) {
      // No key id: the key that opens it is the one whose tag holds.
      for (const { key } of this.#keys) {
        try {
          return decrypt(key, sealed.slice(V1.length));
        } catch {
          // Another key of the ring, perhaps.
        }
      }
      throw new Error('secret (v1) opens under no key of the keyring (SECRETS_ENCRYPTION_KEYS)');
    }
    throw new Error('not a sealed secret');
  }

  /** Whether `sealed` is sealed, in the current format, under the sealing key: nothing for a rotation to do. */
  isCurrent(sealed: string): boolean {
    return this.sealingKeyId !== undefined && sealed.startsWith(`${V2}${this.sealingKeyId}:`);
  }
}

/**
 * The format before the keyring (`v1:`, no key id, no associated data), kept only for
 * Migration20261212000100, which sealed the webhook and trigger secrets stored in clear
 * with the one SECRETS_ENCRYPTION_KEY. `secrets rotate` re-seals such values as `v2:`.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    this.#key = key;
  }

  seal(plaintext: string): string {
    return V1 + encrypt(this.#key, plaintext);
  }

  static isSealed(value: string): boolean {
    return value.startsWith(V1) || value.startsWith(V2);
  }
}

/** The configuration's keys: SECRETS_ENCRYPTION_KEYS, else SECRETS_ENCRYPTION_KEY as the one key `default`, else none. */
export function keysOf(config: SecretsConfig): SecretsKey[] {
  if (config.SECRETS_ENCRYPTION_KEYS) {
    const keys = parseKeyring(config.SECRETS_ENCRYPTION_KEYS);
    if (typeof keys === 'string') throw new Error(`SECRETS_ENCRYPTION_KEYS: ${keys}`);
    return keys;
  }
  const single = config.SECRETS_ENCRYPTION_KEY ? parseSecretsKey(config.SECRETS_ENCRYPTION_KEY) : undefined;
  return single ? [{ id: SINGLE_KEY_ID, key: single }] : [];
}

export interface SecretsConfig {
  readonly SECRETS_ENCRYPTION_KEYS?: string | undefined;
  readonly SECRETS_ENCRYPTION_KEY?: string | undefined;
}

const keyrings = new WeakMap<object, SecretKeyring>();

/** The keyring of this configuration (one per configuration object). */
export function keyringOf(config: SecretsConfig): SecretKeyring {
  let ring = keyrings.get(config);
  if (!ring) {
    ring = new SecretKeyring(keysOf(config));
    keyrings.set(config, ring);
  }
  return ring;
}

/**
 * The one way a secret column is written and read back (webhook and trigger secrets, channel
 * credentials): sealed under this configuration's sealing key, bound to `place`.
 */
export const sealSecret = (config: SecretsConfig, plaintext: string, place: SecretPlace): string => keyringOf(config).seal(plaintext, place);
export const openSecret = (config: SecretsConfig, sealed: string, place: SecretPlace): string => keyringOf(config).open(sealed, place);

/**
 * Every sealed column, by the place its values are bound to: the call sites seal and open
 * with these, and `secrets rotate` (src/secrets-rotation.ts) re-seals each of them.
 */
export const sealedAt = {
  webhookSecret: (webhookId: string) => secretPlace('webhooks', 'secret', webhookId),
  webhookPreviousSecret: (webhookId: string) => secretPlace('webhooks', 'previous_secret', webhookId),
  triggerSecret: (triggerId: string) => secretPlace('triggers', 'configuration.secret', triggerId),
  channelSecret: (connectionId: string, name: string) => secretPlace('channel_connections', `secrets.${name}`, connectionId),
};
