/**
 * Process entry point: `tsx src/main.ts [api|worker|all]` (default all). Loads the
 * configuration, applies migrations (unless MIGRATE_ON_START=false), starts the API and/or the Temporal worker, and on
 * SIGINT/SIGTERM stops accepting work, drains what is in flight and exits.
 */
// First: tracing (when OTEL_EXPORTER_OTLP_ENDPOINT is set) must patch koa, pg, ioredis and undici before they load.
import './telemetry/preload';
import { stopTracing } from './telemetry/state';
import type { Server } from 'node:http';
import { createApiServices, createApp, listen } from './app';
import { ConfigError, loadConfig } from './config';
import { createOrm, ensureDatabase } from './db/orm';
import { migrateExclusively } from './db/migration-lock';
import { entities } from './entities';
import { createLogger } from './logger';
import { closeServices, createServices } from './services';
import { EventDispatcher } from './modules/webhooks/event-dispatcher';
import { undispatchedBacklog } from './modules/events/outbox';
import { runExecutionReconciler } from './reconciler';
import { purgeExpiredOAuthModels } from './modules/oauth/oauth-adapter';
import { ensureFileExpirySchedule } from './modules/files/file-expiry.schedule';
import { createActivities } from '../temporal/activities';
import { createWorker, installTemporalRuntime, runWorker, type RunningWorker } from '../temporal/worker';
import { ensureSearchAttributes } from './temporal-search-attributes';
import { registerWebhookBacklog } from './telemetry/service-metrics';
import { freeLoopbackAddress, prometheusTextReader, startWorkerHttp } from './worker-http';

type Role = 'api' | 'worker' | 'all';

const IDEMPOTENCY_PURGE_INTERVAL_MS = 3_600_000;

async function main() {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!['api', 'worker', 'all'].includes(role)) throw new ConfigError(`Unknown role "${role}": use api, worker or all`);
  // Both roles seal or open stored secrets: without a keyring, stop here, naming the variable.
  const config = loadConfig(process.env, { requireSecretsKey: true });
  const logger = createLogger(config.LOG_LEVEL);
  // Before anything creates the SDK's Runtime: its logs (and webpack's) then come out as our JSON,
  // and its worker metrics are served on loopback, to be appended to our /metrics.
  const coreMetricsAddress = role !== 'api' ? await freeLoopbackAddress() : undefined;
  if (role !== 'api') installTemporalRuntime(logger, { metricsBindAddress: coreMetricsAddress });

  if (config.MIGRATE_ON_START) await ensureDatabase(config.DATABASE_URL);
  const orm = await createOrm(entities, config.DATABASE_URL, config.DATABASE_POOL_MAX, config.DATABASE_ACQUIRE_TIMEOUT_MS);
  if (config.MIGRATE_ON_START) await migrateExclusively(orm, config.DATABASE_URL);
  const services = await createServices(config, { logger, orm });
  if (coreMetricsAddress) services.metrics.appended.push(prometheusTextReader(coreMetricsAddress));

  let server: Server | undefined;
  let purgeTimer: NodeJS.Timeout | undefined;
  if (role !== 'worker') {
    const { app } = createApp(await createApiServices(services));
    server = await listen(app, services, config.PORT, config.HOST);
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.PORT;
    logger.info({ port }, `API listening on http://localhost:${port} (docs: http://localhost:${port}/docs)`);
    // Replays are served for 24 h; older records only take space.
    purgeTimer = setInterval(() => {
      services.idempotency.purgeExpired().catch((err: unknown) => logger.warn({ err }, 'could not purge idempotency keys'));
      // Expired OAuth codes, tokens, sessions and interactions already read as absent.
      purgeExpiredOAuthModels(orm).catch((err: unknown) => logger.warn({ err }, 'could not purge expired OAuth models'));
    }, IDEMPOTENCY_PURGE_INTERVAL_MS);
    purgeTimer.unref();
  }

  let worker: RunningWorker | undefined;
  let metricsServer: Server | undefined;
  if (role === 'worker' && config.METRICS_PORT !== undefined) {
    // A worker-only process has no API: this listener serves /metrics, /healthz and /readyz (worker-http.ts).
    metricsServer = await startWorkerHttp({ port: config.METRICS_PORT, host: config.HOST, metrics: services.metrics, workerState: () => worker?.worker.getState() });
    const address = metricsServer.address();
    logger.info({ port: typeof address === 'object' && address ? address.port : config.METRICS_PORT }, 'worker metrics on /metrics, readiness on /readyz');
  }

  let dispatcher: EventDispatcher | undefined;
  let stopReconciler: (() => Promise<void>) | undefined;
  if (role !== 'api') {
    // What the dispatcher below has yet to fan out, read at each scrape.
    registerWebhookBacklog(services.metrics.registry, () => undispatchedBacklog(orm.em.fork()));
    // Idempotent; lets an external server (docker-compose, production) work without manual setup.
    await ensureSearchAttributes(services.temporal.connection, config.TEMPORAL_NAMESPACE);
    worker = runWorker(
      await createWorker({
        address: config.TEMPORAL_ADDRESS_EFFECTIVE,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        activities: createActivities({ services }),
        ...(config.TEMPORAL_WORKFLOW_BUNDLE_PATH ? { workflowBundle: { codePath: config.TEMPORAL_WORKFLOW_BUNDLE_PATH } } : {}),
        ...(config.TEMPORAL_STICKY_QUEUE_TIMEOUT_MS !== undefined ? { stickyQueueScheduleToStartTimeout: config.TEMPORAL_STICKY_QUEUE_TIMEOUT_MS } : {}),
        slots: {
          activities: config.WORKER_ACTIVITY_SLOTS,
          workflowTasks: config.WORKER_WORKFLOW_TASK_SLOTS,
          eagerActivities: config.WORKER_EAGER_ACTIVITY_SLOTS,
          targetCpu: config.WORKER_TARGET_CPU,
        },
      }),
    );
    // Report and export files past REPORT_RETENTION_DAYS are deleted hourly (see file-expiry.ts).
    await ensureFileExpirySchedule(services);
    logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
    // The outbox → webhook delivery fan-out lives with the worker (see event-dispatcher.ts).
    dispatcher = new EventDispatcher(services);
    dispatcher.start();
    // Starts executions and jobs whose Temporal start a crash interrupted (see
    // starts/durable-start.ts) and re-sends cancels that never reached Temporal (see execution.canceller.ts).
    stopReconciler = runExecutionReconciler(services);
    worker.done.catch((err: unknown) => {
      logger.fatal({ err }, 'worker stopped with an error');
      process.exit(1);
    });
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    clearInterval(purgeTimer);
    logger.info({ signal }, 'shutting down: draining in-flight work');
    await Promise.all([
      server && new Promise<void>((resolve) => server!.close(() => resolve())),
      metricsServer && new Promise<void>((resolve) => metricsServer!.close(() => resolve())),
      worker?.shutdown(),
      dispatcher?.stop(),
      stopReconciler?.(),
    ]);
    await closeServices(services);
    await stopTracing();
    logger.info('stopped');
    process.exit(0);
  };
  // `on`, not `once`: a group signal reaches us twice (directly and relayed by tsx), and
  // a second delivery without a handler would kill the process mid-drain.
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).stack}\n`);
  process.exit(1);
});
