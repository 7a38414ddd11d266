/**
 * Owns the `Services` bag: the infrastructure every process shares (configuration, logger,
 * PostgreSQL, Redis, Temporal, metrics, file storage, request limits), built once here,
 * passed down explicitly (no global service object) and closed in reverse order. Modules'
 * own state (credential verifiers, the OAuth server, caches) is not here: the API builds
 * it in src/app.ts, and a worker builds only what its activities use.
 */
import Redis from 'ioredis';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { Config } from './config';
import { DependencyMonitor } from './dependency-monitor';
import { type Endpoints, endpointsFromConfig } from './failures';
import { createHotPool, type HotPool } from './db/hot-query';
import type { Orm } from './db/orm';
import { IdempotencyStore } from './http/idempotency';
import { type LimitName, type LimitRule, limitRulesFromConfig, RateLimiter } from './http/rate-limit';
import { BackgroundTasks } from './background-tasks';
import { createLogger, type Logger } from './logger';
import { createLazyTemporalClient, createTemporalClient, isTemporalReachable, type TemporalClient } from './temporal-client';
import { createFileStorage, type FileStorage } from './storage/file-storage';

export interface HttpMetrics {
  registry: Registry;
  requests: Counter<string>;
  duration: Histogram<string>;
  /** Other exporters' text appended to /metrics (a worker's Core SDK metrics, see src/main.ts). */
  appended: Array<() => Promise<string>>;
}

/** What /metrics serves: the registry, then each appended exporter's text (one that fails is left out). */
export async function metricsExposition(metrics: HttpMetrics): Promise<string> {
  const parts = await Promise.all([metrics.registry.metrics(), ...metrics.appended.map((read) => read().catch(() => ''))]);
  return parts.filter((p) => p !== '').map((p) => (p.endsWith('\n') ? p : `${p}\n`)).join('');
}

export interface Services {
  config: Config;
  logger: Logger;
  orm: Orm;
  /** The hottest reads' own small pg pool (db/hot-query.ts). */
  hotPool: HotPool;
  redis: Redis;
  temporal: TemporalClient;
  rateLimiter: RateLimiter;
  limits: Record<LimitName, LimitRule>;
  idempotency: IdempotencyStore;
  metrics: HttpMetrics;
  /** Outages seen by this process: logged once each, probed until they end. */
  dependencies: DependencyMonitor;
  /** Where PostgreSQL, Redis and Temporal listen, so error classification can name them. */
  endpoints: Endpoints;
  /** Report and export files (local directory or S3). */
  files: FileStorage;
  /** Work requests leave running after they answer (Temporal starts after a commit). */
  background: BackgroundTasks;
}

export function createRedis(url: string): Redis {
  // Fail fast instead of queueing commands while Redis is away: callers have fallbacks.
  // Auto-pipelining batches the rate-limit scripts of concurrent requests into one write.
  return new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1000, enableAutoPipelining: true });
}

/** How long start-up waits for Redis before serving with the in-memory rate-limit fallback. */
const REDIS_READY_WAIT_MS = 2000;

/**
 * Without an offline queue, commands fail until the connection is up; waiting for it here
 * keeps the first requests from counting their limits in memory and /readyz from
 * reporting Redis missing. Redis being down does not stop the start.
 */
function redisReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    timer.unref();
    redis.once('ready', done);
    function done() {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
  });
}

function createMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by method and route',
      labelNames: ['method', 'route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    appended: [],
  };
}

/** The ORM comes from the caller, which knows the process's entities (src/entities.ts) and migrates first. */
export async function createServices(config: Config, { orm, logger = createLogger(config.LOG_LEVEL) }: { orm: Orm; logger?: Logger }): Promise<Services> {
  const redis = createRedis(config.REDIS_URL);
  redis.on('error', () => {
    // Reported by the rate limiter and /readyz; ioredis reconnects by itself.
  });
  await redisReady(redis, REDIS_READY_WAIT_MS);
  const temporalOptions = { address: config.TEMPORAL_ADDRESS_EFFECTIVE, namespace: config.TEMPORAL_NAMESPACE };
  // The API keeps serving while Temporal is away: execution starts are committed first and a
  // worker's reconciler starts them later; /readyz says `temporal: unavailable` meanwhile.
  const temporal = await createTemporalClient(temporalOptions).catch((err: unknown) => {
    logger.warn({ err: (err as Error).message, address: temporalOptions.address }, 'Temporal unreachable at start; connecting lazily');
    return createLazyTemporalClient(temporalOptions);
  });
  const hotPool = createHotPool(orm, { max: config.DATABASE_POOL_MAX, acquireTimeoutMs: config.DATABASE_ACQUIRE_TIMEOUT_MS, logger });
  return {
    config,
    logger,
    orm,
    hotPool,
    redis,
    temporal,
    rateLimiter: new RateLimiter(redis, config.REDIS_KEY_PREFIX, logger),
    limits: limitRulesFromConfig(config),
    idempotency: new IdempotencyStore(orm, config.IDEMPOTENCY_LEASE_MS),
    metrics: createMetrics(),
    dependencies: new DependencyMonitor(logger, {
      postgres: () => orm.em.getConnection().execute('select 1'),
      redis: () => redis.ping(),
      temporal: () => isTemporalReachable(temporal.connection),
    }),
    endpoints: endpointsFromConfig(config),
    files: createFileStorage(config),
    background: new BackgroundTasks(logger, { limit: config.BACKGROUND_CALLS_IN_FLIGHT }),
  };
}

export async function closeServices(s: Services): Promise<void> {
  await s.background.drain();
  s.dependencies.close();
  await s.temporal.close().catch(() => undefined);
  s.redis.disconnect();
  s.files.close?.();
  await s.hotPool.end();
  await s.orm.close(true);
}
