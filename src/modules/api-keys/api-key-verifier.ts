/**
 * Verifies API keys for the HTTP layer (src/http/auth.ts).
 *
 * Keys are looked up by SHA-256 hash and cached in-process for AUTH_CACHE_TTL_MS
 * (≤ 1 s), so a hot key costs no database round trip while a revocation still bites
 * within a second in every process without any cross-process signalling. An entry is
 * served until TTL after its lookup *started*; past half its life the first request
 * starts one background lookup (refresh-ahead) and is answered from the entry, so a key
 * in steady use never waits on the database. A miss is looked up once however many
 * requests wait on it (no stampede of identical queries at each expiry, which measured
 * as the API's p99: docs/performance.md).
 */
import type { Logger } from 'pino';
import { API_KEY_PREFIX, hashApiKey } from '../../credentials/api-key-hash';
import { type Credential, CredentialRefused, type CredentialVerifier } from '../../credentials/credential';
import { type Permission, PERMISSION_SCOPES } from '../../credentials/scopes';
import { type HotPool, hotQuery } from '../../db/hot-query';
import type { Orm } from '../../db/orm';
import type { Services } from '../../services';
import { ApiKey } from './api-key.entity';

interface CacheEntry {
  credential: Credential | null;
  /** When the lookup that produced it started, plus the TTL: never served later. */
  expiresAt: number;
  /** From here on the first request starts a background lookup. */
  refreshAt: number;
}

const MAX_CACHE_ENTRIES = 10_000;

/** The columns a credential needs, of a key not revoked (db/hot-query.ts). */
const FIND_API_KEY = {
  name: 'api_keys.authenticate',
  text: 'select id, name, organization_id, permission from api_keys where key_hash = $1 and revoked_at is null',
};
/** last_used_at is written at most this often per key: precise enough, and no write per request. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export class ApiKeyVerifier implements CredentialVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  /** One lookup per key hash at a time; `forget` drops it so its answer is not cached. */
  private readonly lookups = new Map<string, Promise<CacheEntry>>();
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(
    private readonly orm: Orm,
    /** Lookups go through the hot-query pool: the ORM's findOne cost ~1 ms of CPU each (4 per second per hot key). */
    private readonly hotPool: HotPool,
    private readonly ttlMs: number,
    private readonly logger: Logger,
  ) {}

  accepts(token: string): boolean {
    return token.startsWith(API_KEY_PREFIX);
  }

  verify(token: string): Credential | Promise<Credential> {
    const hash = hashApiKey(token);
    const now = Date.now();
    const entry = this.cache.get(hash);
    if (entry && entry.expiresAt > now) {
      if (now >= entry.refreshAt && !this.lookups.has(hash)) {
        // A failed refresh is not this request's problem: the entry still holds until it expires.
        this.lookup(hash, now).catch((err: unknown) => this.logger.warn({ err }, 'api key refresh failed'));
      }
      return this.credentialOf(entry, now);
    }
    return (this.lookups.get(hash) ?? this.lookup(hash, now)).then((looked) => this.credentialOf(looked, now));
  }

  private credentialOf(entry: CacheEntry, now: number): Credential {
    if (!entry.credential) throw new CredentialRefused('invalid_api_key', 'API key is invalid or revoked');
    this.touch(entry.credential.id, now);
    return entry.credential;
  }

  private lookup(hash: string, startedAt: number): Promise<CacheEntry> {
    const entryOf = (credential: Credential | null) => ({ credential, expiresAt: startedAt + this.ttlMs, refreshAt: startedAt + this.ttlMs / 2 });
    // Without a cache every request reads the key itself: a shared lookup may predate it.
    if (this.ttlMs === 0) return this.load(hash).then(entryOf);
    // Assigned before the body first resumes after its await, where it compares against it.
    let lookup!: Promise<CacheEntry>;
    lookup = (async () => {
      try {
        const entry = entryOf(await this.load(hash));
        // Forgotten meanwhile (revoked here): answer the waiting requests, keep nothing.
        if (this.lookups.get(hash) === lookup) {
          if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
          this.cache.set(hash, entry);
        }
        return entry;
      } finally {
        if (this.lookups.get(hash) === lookup) this.lookups.delete(hash);
      }
    })();
    this.lookups.set(hash, lookup);
    return lookup;
  }

  private async load(hash: string): Promise<Credential | null> {
    const [key] = await hotQuery<{ id: string; name: string; organization_id: string; permission: Permission }>(this.hotPool, FIND_API_KEY, [hash]);
    if (!key) return null;
    return {
      type: 'api_key',
      id: key.id,
      name: key.name,
      organizationId: key.organization_id,
      permission: key.permission,
      scopes: PERMISSION_SCOPES[key.permission],
      limitSubject: key.id,
    };
  }

  private touch(keyId: string, now: number): void {
    const last = this.lastUsedWritten.get(keyId) ?? 0;
    if (now - last < LAST_USED_WRITE_INTERVAL_MS) return;
    this.lastUsedWritten.set(keyId, now);
    this.orm.em
      .fork()
      .nativeUpdate(ApiKey, { id: keyId }, { lastUsedAt: new Date(now) })
      .catch((err: unknown) => this.logger.warn({ err, keyId }, 'could not record api key last_used_at'));
  }

  /** Forgets a key at once in this process (other processes follow within the TTL). */
  forget(keyHash: string): void {
    this.cache.delete(keyHash);
    this.lookups.delete(keyHash);
  }
}

/** The verifier of an API process (src/app.ts). */
export const createApiKeyVerifier = ({ orm, hotPool, config, logger }: Services) => new ApiKeyVerifier(orm, hotPool, config.AUTH_CACHE_TTL_MS, logger);
