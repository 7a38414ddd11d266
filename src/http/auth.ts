/**
 * Owns authentication and authorization: turns the Bearer credential into a `Credential`
 * scoped to one organization, and checks a route's required scope.
 *
 * API keys are looked up by SHA-256 hash and cached in-process for AUTH_CACHE_TTL_MS
 * (≤ 1 s), so a hot key costs no database round trip while a revocation still bites
 * within a second in every process without any cross-process signalling.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
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

/** The spec's permission levels as scope sets: read < read_write (no delete) < admin. */
export const PERMISSION_SCOPES: Record<Permission, ReadonlySet<Scope>> = {
  read: new Set(SCOPES.filter((s) => s.endsWith(':read'))),
  read_write: new Set(SCOPES.filter((s) => s.endsWith(':read') || s.endsWith(':write'))),
  admin: new Set(SCOPES),
};

export interface Credential {
  type: 'api_key';
  id: string;
  name: string;
  organizationId: string;
  permission: Permission;
  scopes: ReadonlySet<Scope>;
}

export const API_KEY_PREFIX = 'wfa_';

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

const unauthorized = (code: string, message: string) =>
  new AppError(401, code, message, { headers: { 'WWW-Authenticate': `Bearer error="invalid_token"` } });

interface CacheEntry {
  credential: Credential | null;
  expiresAt: number;
}

const MAX_CACHE_ENTRIES = 10_000;
/** last_used_at is written at most this often per key: precise enough, and no write per request. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(
    private readonly orm: Orm,
    private readonly ttlMs: number,
    private readonly logger: Logger,
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
    if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized('INVALID_TOKEN', 'Access token is invalid or expired');

    const hash = hashApiKey(token);
    const now = Date.now();
    let entry = this.cache.get(hash);
    if (!entry || entry.expiresAt <= now) {
      entry = { credential: await this.load(hash), expiresAt: now + this.ttlMs };
      if (this.ttlMs > 0) {
        if (this.cache.size >= MAX_CACHE_ENTRIES) this.cache.clear();
        this.cache.set(hash, entry);
      }
    }
    if (!entry.credential) throw unauthorized('INVALID_API_KEY', 'API key is invalid or revoked');
    this.touch(entry.credential.id, now);
    return entry.credential;
  }

  private async load(hash: string): Promise<Credential | null> {
    const key = await this.orm.em.fork().findOne(ApiKey, { keyHash: hash, revokedAt: null });
    if (!key) return null;
    return {
      type: 'api_key',
      id: key.id,
      name: key.name,
      organizationId: key.organizationId,
      permission: key.permission,
      scopes: PERMISSION_SCOPES[key.permission],
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
  }
}

export function requireScope(credential: Credential, scope: Scope): void {
  if (credential.scopes.has(scope)) return;
  throw new AppError(
    403,
    'INSUFFICIENT_PERMISSIONS',
    `This API key's permission (${credential.permission}) does not allow this operation (needs ${scope})`,
  );
}
