/**
 * Owns authentication and authorization: turns the Bearer credential into a `Credential`
 * scoped to one organization, and checks a route's required scope.
 *
 * API keys are looked up by SHA-256 hash and cached in-process for AUTH_CACHE_TTL_MS
 * (≤ 1 s), so a hot key costs no database round trip while a revocation still bites
 * within a second in every process without any cross-process signalling. An entry is
 * served until TTL after its lookup *started*; past half its life the first request
 * starts one background lookup (refresh-ahead) and is answered from the entry, so a key
 * in steady use never waits on the database. A miss is looked up once however many
 * requests wait on it (no stampede of identical queries at each expiry, which measured
 * as the API's p99: docs/performance.md). Other Bearer values (OAuth access tokens,
 * JWTs) go to the `BearerVerifier`s the services register.
 */
import { hash as oneShotHash } from 'node:crypto';
import type { Logger } from 'pino';
import { type HotPool, hotQuery } from '../db/hot-query';
import type { Orm } from '../db/orm';
import { ApiKey, type Permission } from '../modules/api-keys/api-key.entity';
import { AppError } from './errors';

export const SCOPES = [
  'workflows:read',
  'workflows:write',
  'workflows:delete',
  'triggers:read',
  'triggers:write',
  'triggers:delete',
  'webhooks:read',
  'webhooks:write',
  'webhooks:delete',
  'analytics:read',
  'analytics:write',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Each scope in plain words: the consent page and the OpenAPI oauth2 scheme show these. */
export const SCOPE_WORDS: Record<Scope, string> = {
  'workflows:read': 'See your workflows, executions, customers and knowledge bases',
  'workflows:write': 'Create and change workflows, and send messages',
  'workflows:delete': 'Delete workflows',
  'triggers:read': 'See your triggers',
  'triggers:write': 'Create, change and fire triggers',
  'triggers:delete': 'Delete triggers',
  'webhooks:read': 'See your webhooks and their delivery logs',
  'webhooks:write': 'Create and change webhooks',
  'webhooks:delete': 'Delete webhooks',
  'analytics:read': 'See analytics',
  'analytics:write': 'Create reports and exports',
  admin: 'Manage API keys, users and applications (full administrator access)',
};

/** The spec's permission levels as scope sets: read < read_write (no delete) < admin. */
export const PERMISSION_SCOPES: Record<Permission, ReadonlySet<Scope>> = {
  read: new Set(SCOPES.filter((s) => s.endsWith(':read'))),
  read_write: new Set(SCOPES.filter((s) => s.endsWith(':read') || s.endsWith(':write'))),
  admin: new Set(SCOPES),
};

export interface Credential {
  type: 'api_key' | 'oauth' | 'jwt';
  /** API key id, OAuth grant id (one user's consent to one client) or JWT application id. */
  id: string;
  name: string;
  organizationId: string;
  /** The API key's level or the OAuth user's role; null for a JWT application. */
  permission: Permission | null;
  scopes: ReadonlySet<Scope>;
  /** Whom rate limits count against: the key, the grant (user × client) or the application. */
  limitSubject: string;
  /** JWT `sub` or the OAuth user id: logged with each request. */
  subject?: string;
  clientId?: string;
  userId?: string;
  expiresAt?: Date;
}

/** Verifies one kind of Bearer token that is not an API key. */
export interface BearerVerifier {
  accepts(token: string): boolean;
  /** Throws `invalidToken(...)` (401) or a 403 for a token it refuses. */
  verify(token: string): Promise<Credential>;
}

export const API_KEY_PREFIX = 'wfa_';

/** One-shot `hash` (Node ≥ 20.12): a quarter of `createHash(…).update(…).digest(…)`'s CPU, per request. */
export const hashApiKey = (key: string) => oneShotHash('sha256', key, 'hex');

const unauthorized = (code: string, message: string) =>
  new AppError(401, code, message, { headers: { 'WWW-Authenticate': `Bearer error="invalid_token"` } });

/** 401 INVALID_TOKEN with the RFC 6750 challenge, for any refused OAuth token or JWT. */
export const invalidToken = (message = 'Access token is invalid or expired') => unauthorized('INVALID_TOKEN', message);

/** 403 SCOPE_INSUFFICIENT with the RFC 6750 challenge naming what was missing. */
export const scopeInsufficient = (message: string, scope: string) =>
  new AppError(403, 'SCOPE_INSUFFICIENT', message, {
    headers: { 'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${scope}"` },
  });

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

export class Authenticator {
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
    private readonly verifiers: BearerVerifier[] = [],
  ) {}

  async authenticate(authorization: string | undefined): Promise<Credential> {
    if (!authorization) {
      throw new AppError(401, 'MISSING_AUTHENTICATION', 'Authentication required: send Authorization: Bearer <credential>', {
        headers: { 'WWW-Authenticate': 'Bearer' },
      });
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw unauthorized('MISSING_AUTHENTICATION', 'Authorization header must be "Bearer <credential>"');
    const token = match[1]!;
    if (!token.startsWith(API_KEY_PREFIX)) {
      const verifier = this.verifiers.find((v) => v.accepts(token));
      if (!verifier) throw invalidToken();
      return verifier.verify(token);
    }

    const hash = hashApiKey(token);
    const now = Date.now();
    let entry = this.cache.get(hash);
    if (entry && entry.expiresAt > now) {
      if (now >= entry.refreshAt && !this.lookups.has(hash)) {
        // A failed refresh is not this request's problem: the entry still holds until it expires.
        this.lookup(hash, now).catch((err: unknown) => this.logger.warn({ err }, 'api key refresh failed'));
      }
    } else {
      entry = await (this.lookups.get(hash) ?? this.lookup(hash, now));
    }
    if (!entry.credential) throw unauthorized('INVALID_API_KEY', 'API key is invalid or revoked');
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

export function requireScope(credential: Credential, scope: Scope): void {
  if (credential.scopes.has(scope)) return;
  if (credential.type !== 'api_key') throw scopeInsufficient(`This token's scope does not include ${scope}`, scope);
  throw new AppError(
    403,
    'INSUFFICIENT_PERMISSIONS',
    `This API key's permission (${credential.permission}) does not allow this operation (needs ${scope})`,
  );
}
