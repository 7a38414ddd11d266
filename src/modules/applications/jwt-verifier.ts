/**
 * Owns JWT verification for `/v1` (server-to-server tokens), with `jose`:
 * - only RS256, PS256, ES256 and EdDSA; `none` and HS* are refused before any key is
 *   looked at (so a public key can never be used as an HMAC secret);
 * - `iss` names an application of the service; its registered keys (inline, or fetched
 *   from its `jwks_uri` through the webhook SSRF guard and cached 10 min) verify the
 *   signature, and the header `kid` selects the key;
 * - `aud` = JWT_AUDIENCE; `exp`, `iat` and `sub` required; `exp` at most 1 h after `iat`;
 *   60 s of clock skew;
 * - `scope` may only hold the application's scopes (a wider claim is 403 SCOPE_INSUFFICIENT);
 * - a token is a bearer credential: the contract's claims alone make it valid for every
 *   request until `exp`. An application registered with `require_jti` opts into replay
 *   protection: its tokens need a `jti`, accepted once (remembered in Redis until `exp`).
 * Applications are cached in-process for AUTH_CACHE_TTL_MS, so deleting one or rotating
 * its keys bites within a second in every process.
 */
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import type Redis from 'ioredis';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose';
import { Agent, fetch as undiciFetch } from 'undici';
import type { Orm } from '../../db/orm';
import { unavailable } from '../../errors';
import { type Credential, CredentialRefused, type CredentialVerifier, invalidToken } from '../../credentials/credential';
import { SCOPES, type Scope } from '../../credentials/scopes';
import { guardedLookup } from '../webhooks/webhook-target';
import { Application } from './application.entity';
import type { Services } from '../../services';
import { JWT_ALGORITHMS } from './application.schemas';

const CLOCK_SKEW_S = 60;
const MAX_LIFETIME_S = 3600;
const JWKS_CACHE_MAX_AGE_MS = 600_000;
const JWKS_FETCH_TIMEOUT_MS = 5_000;
const MAX_CACHED_APPLICATIONS = 10_000;

interface CachedApplication {
  app: Application | null;
  keys: JWTVerifyGetKey | null;
  expiresAt: number;
}

export interface JwtVerifierOptions {
  audience: string;
  cacheTtlMs: number;
  allowPrivateNetworks: boolean;
  redisKeyPrefix: string;
  /** PEM of extra CAs trusted for jwks_uri hosts (the webhook setting). */
  extraCa?: string;
}

/** The verifier of an API process (src/app.ts), from its configuration. */
export function createJwtVerifier({ config, orm, redis }: Services): JwtVerifier {
  return new JwtVerifier(orm, redis, {
    audience: config.JWT_AUDIENCE_EFFECTIVE,
    cacheTtlMs: config.AUTH_CACHE_TTL_MS,
    allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
    redisKeyPrefix: config.REDIS_KEY_PREFIX,
    ...(config.WEBHOOK_EXTRA_CA_FILE ? { extraCa: readFileSync(config.WEBHOOK_EXTRA_CA_FILE, 'utf8') } : {}),
  });
}

/** A compact JWS: three base64url parts. API keys and opaque OAuth tokens have no dots. */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

export class JwtVerifier implements CredentialVerifier {
  private readonly cache = new Map<string, CachedApplication>();
  /** Remote key sets live longer than the application cache: jose caches the fetched JWKS inside. */
  private readonly remote = new Map<string, { uri: string; keys: JWTVerifyGetKey }>();
  private readonly agent: Agent;

  constructor(
    private readonly orm: Orm,
    private readonly redis: Redis,
    private readonly opts: JwtVerifierOptions,
  ) {
    this.agent = new Agent({
      connect: {
        lookup: guardedLookup(opts.allowPrivateNetworks),
        timeout: JWKS_FETCH_TIMEOUT_MS,
        ...(opts.extraCa ? { ca: [...tls.rootCertificates, opts.extraCa] } : {}),
      },
    });
  }

  accepts(token: string): boolean {
    return JWT_SHAPE.test(token);
  }

  async verify(token: string): Promise<Credential> {
    let alg: string | undefined;
    let iss: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
      iss = decodeJwt(token).iss;
    } catch {
      throw invalidToken('Token is not a well-formed JWT');
    }
    if (!(JWT_ALGORITHMS as readonly string[]).includes(alg ?? '')) {
      throw invalidToken(`JWT algorithm ${alg ?? '(none)'} is not accepted; use one of ${JWT_ALGORITHMS.join(', ')}`);
    }
    if (typeof iss !== 'string') throw invalidToken('JWT iss must be an application id');
    const { app, keys } = await this.application(iss);
    if (!app || !keys) throw invalidToken('JWT iss is not a registered application');

    let payload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        algorithms: [...JWT_ALGORITHMS],
        issuer: app.id,
        audience: this.opts.audience,
        clockTolerance: CLOCK_SKEW_S,
        // Also refuses an iat in the future (beyond the skew).
        maxTokenAge: MAX_LIFETIME_S,
        requiredClaims: app.requireJti ? ['exp', 'iat', 'sub', 'jti'] : ['exp', 'iat', 'sub'],
      }));
    } catch (err) {
      throw invalidToken(describeJoseError(err));
    }
    const exp = payload.exp!;
    const iat = payload.iat!;
    if (exp - iat > MAX_LIFETIME_S) throw invalidToken(`JWT lifetime (exp - iat) exceeds ${MAX_LIFETIME_S} s`);
    if (typeof payload.sub !== 'string') throw invalidToken('JWT sub must be a string');
    if (payload.jti !== undefined && (typeof payload.jti !== 'string' || payload.jti.length > 200)) {
      throw invalidToken('JWT jti must be a string of at most 200 characters');
    }

    const claimed = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    const allowed = new Set<string>(app.scopes);
    const beyond = claimed.find((s) => !allowed.has(s));
    if (beyond) throw new CredentialRefused('insufficient_scope', `JWT scope ${beyond} is not granted to application ${app.id}`, beyond);

    if (app.requireJti) await this.claimJti(app.id, payload.jti!, exp);
    return {
      type: 'jwt',
      id: app.id,
      name: app.name,
      organizationId: app.organizationId,
      permission: null,
      scopes: new Set(SCOPES.filter((s) => claimed.includes(s))) as ReadonlySet<Scope>,
      limitSubject: app.id,
      subject: payload.sub,
      expiresAt: new Date(exp * 1000),
    };
  }

  /** Forgets an application at once in this process (other processes follow within the TTL). */
  forget(applicationId: string): void {
    this.cache.delete(applicationId);
    this.remote.delete(applicationId);
  }

  /** SET NX with the token's expiry (+ skew): the first use wins, every later one is a replay. */
  private async claimJti(applicationId: string, jti: string, exp: number): Promise<void> {
    const key = `${this.opts.redisKeyPrefix}jwt-jti:${applicationId}:${jti}`;
    let first: string | null;
    try {
      first = await this.redis.set(key, '1', 'EXAT', exp + CLOCK_SKEW_S, 'NX');
    } catch {
      // Fail closed: without the replay check a stolen token could be replayed.
      throw unavailable('SERVICE_UNAVAILABLE', 'JWT replay protection is unavailable; retry shortly', 1);
    }
    if (first !== 'OK') throw invalidToken('JWT jti has been used before (replay)');
  }

  private async application(id: string): Promise<{ app: Application | null; keys: JWTVerifyGetKey | null }> {
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && hit.expiresAt > now) return hit;
    const app = id.length <= 64 ? await this.orm.em.fork().findOne(Application, { id }) : null;
    const entry: CachedApplication = { app, keys: app ? this.keySet(app) : null, expiresAt: now + this.opts.cacheTtlMs };
    if (this.cache.size >= MAX_CACHED_APPLICATIONS) this.cache.clear();
    this.cache.set(id, entry);
    return entry;
  }

  private keySet(app: Application): JWTVerifyGetKey {
    if (app.jwks) return createLocalJWKSet(app.jwks);
    const uri = app.jwksUri!;
    const known = this.remote.get(app.id);
    if (known?.uri === uri) return known.keys;
    const keys = createRemoteJWKSet(new URL(uri), {
      cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
      timeoutDuration: JWKS_FETCH_TIMEOUT_MS,
      // Every fetch dials through the SSRF guard: no loopback, private or metadata address.
      [customFetch]: (url: string, init: RequestInit) =>
        undiciFetch(url, { ...(init as object), redirect: 'manual', dispatcher: this.agent }) as unknown as Promise<Response>,
    });
    this.remote.set(app.id, { uri, keys });
    return keys;
  }
}

function describeJoseError(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return `JWT has expired (${err.message})`;
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'JWT kid does not match a registered key';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'JWT signature is invalid';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `JWT claim refused: ${err.message}`;
  if (err instanceof joseErrors.JOSEError) return `JWT refused: ${err.message}`;
  return 'JWT could not be verified';
}
