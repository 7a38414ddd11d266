/**
 * Owns what the whole jest run shares: checks that PostgreSQL and Redis are up, starts ONE
 * Temporal dev server for every test file, bundles the workflow code ONCE into a temporary
 * file, compiles the service once for the processes tests spawn (service-build.ts), and
 * hands the server's address, the bundle's and build's paths and a per-run id to the jest
 * workers through process.env (workers, and the processes they spawn, inherit the env set
 * here). A server or a webpack run per file (or per spawned worker) would cost seconds each.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import Redis from 'ioredis';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { findOrInstallTemporalCli } from '../../scripts/lib/temporal-cli';
import { DEV_SERVER_TUNING_ARGS, FAIRNESS_ARGS } from '../../scripts/lib/temporal-dev-server';
import { ensureSearchAttributes } from '../../src/temporal-search-attributes';
import { SEARCH_ATTRIBUTES } from '../../temporal/shared';
import { workflowsPath } from '../../temporal/worker';
import { createOrm, dropDatabase, ensureDatabase, migrate } from '../../src/db/orm';
import { entities } from '../../src/entities';
import globalTeardown from './global-teardown';
import { spawnProcess } from './process';
import { buildServiceCode } from './service-build';

declare global {
  // Read by global-teardown.ts: jest runs both in the same process.
  var __TEMPORAL_TEST_ENV__: TestWorkflowEnvironment | undefined;
  // The directory holding the run's workflow bundle; removed by global-teardown.ts.
  var __WORKFLOW_BUNDLE_DIR__: string | undefined;
  // The run's compiled copy of the service (service-build.ts); removed by global-teardown.ts.
  var __SERVICE_BUILD_DIR__: string | undefined;
}

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

async function checkPostgres(): Promise<void> {
  const pg = new PgClient({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3_000 });
  try {
    await pg.connect();
    await pg.query('select 1');
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${DATABASE_URL} (${String(err)}).\n` +
        'Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n' +
        '(or run .ci/run, which starts PostgreSQL and Redis before the tests).',
    );
  } finally {
    await pg.end().catch(() => undefined);
  }
}

async function checkRedis(): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3_000, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    throw new Error(
      `Redis is not reachable at ${REDIS_URL} (${String(err)}).\n` +
        'Start it with: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no',
    );
  } finally {
    redis.disconnect();
  }
}

async function startTemporal(): Promise<string> {
  // A developer may point the tests at a server they already run.
  const existing = process.env.TEST_TEMPORAL_ADDRESS;
  if (existing) {
    await ensureSearchAttributes(existing, 'default');
    return existing;
  }
  const cli = await findOrInstallTemporalCli();
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      // Without a local CLI the SDK downloads one (network); with it, startup is ~0.1 s.
      executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' },
      ip: '127.0.0.1',
      // No port: the SDK picks a free one. No dbFilename: in-memory SQLite, fastest.
      searchAttributes: [...SEARCH_ATTRIBUTES],
      log: { format: 'text', level: 'warn' },
      extraArgs: [...DEV_SERVER_TUNING_ARGS, ...FAIRNESS_ARGS],
    },
  });
  globalThis.__TEMPORAL_TEST_ENV__ = env;
  return env.address;
}

/**
 * Bundles temporal/workflows with webpack and writes the bundle to a file: every test
 * worker (test/helpers/temporal.ts) and every spawned `src/main.ts worker` loads it through
 * TEMPORAL_WORKFLOW_BUNDLE_PATH instead of running webpack again. Always built fresh, from
 * the code under test, plus one test-only interceptor that shortens the Temporal waits the
 * tests sit through (test-workflow-timings.ts).
 */
async function bundleWorkflowsOnce(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'wfa-workflow-bundle-'));
  globalThis.__WORKFLOW_BUNDLE_DIR__ = dir;
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [path.join(__dirname, 'test-workflow-timings.ts')],
    logger: new DefaultLogger('WARN'),
  });
  const file = path.join(dir, 'workflows.js');
  await writeFile(file, code);
  return file;
}

/**
 * Applies every migration once, to a template database: each test file's database is then
 * a copy of it (test/helpers/app.ts), which takes a fraction of running the migrations per
 * file. The copies still run `migrate` (a no-op check), as the service does at start.
 */
async function migrateTemplateDatabase(runId: string): Promise<string> {
  const url = new URL(DATABASE_URL);
  url.pathname = `/wfa_test_template_${runId}`;
  const templateUrl = url.toString();
  await dropDatabase(templateUrl);
  await ensureDatabase(templateUrl);
  const orm = await createOrm(entities, templateUrl, 1);
  try {
    await migrate(orm);
  } finally {
    // A database with open connections cannot be copied.
    await orm.close(true);
  }
  return templateUrl;
}

const ROOT = path.resolve(__dirname, '..', '..');

/** Runs a command of the repository; rejects with its output when it exits other than 0. */
async function check(name: string, command: string, args: string[]): Promise<void> {
  const run = spawnProcess(command, args, { cwd: ROOT });
  const { code } = await run.exited;
  if (code !== 0) throw new Error(`${name} failed (exit ${code}); no test ran:\n${run.lines.join('\n')}`);
}

/**
 * `npm test` (TEST_STATIC_CHECKS=1) type-checks and checks the import rules while this
 * setup bundles, builds and migrates, instead of before jest starts: the two were ~15 s
 * (fresh clone; ~5 s with tsc's incremental state) of each `npm test` during which no test
 * ran, and the setup's own work leaves a core free for most of its time. No test runs
 * unless both pass.
 */
function startStaticChecks(): Promise<unknown> {
  if (process.env.TEST_STATIC_CHECKS !== '1') return Promise.resolve();
  const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
  return Promise.all([
    check('npm run typecheck', 'npm', ['run', '--silent', 'typecheck']),
    check('the import rules (npm run lint:deps)', bin('depcruise'), ['src', 'temporal', '--config', '.dependency-cruiser.cjs', '--output-type', 'err']),
    check('the module-folder loops (npm run lint:deps)', bin('depcruise'), ['src', '--config', '.dependency-cruiser.modules.cjs', '--output-type', 'err']),
  ]);
}

export default async function globalSetup(): Promise<void> {
  const staticChecks = startStaticChecks();
  // Failing checks are awaited below, after the setup: not an unhandled rejection meanwhile.
  staticChecks.catch(() => undefined);
  await Promise.all([checkPostgres(), checkRedis()]);
  process.env.TEST_RUN_ID ??= randomBytes(3).toString('hex');
  // Stored secrets are sealed with it (src/secrets.ts); every app and worker of the run shares it.
  process.env.SECRETS_ENCRYPTION_KEY ??= randomBytes(32).toString('base64');
  const [address, bundlePath, templateUrl, serviceBuildDir] = await Promise.all([
    startTemporal(),
    bundleWorkflowsOnce(),
    migrateTemplateDatabase(process.env.TEST_RUN_ID),
    buildServiceCode(process.env.TEST_RUN_ID),
  ]);
  globalThis.__SERVICE_BUILD_DIR__ = serviceBuildDir;
  process.env.TEST_SERVICE_BUILD_DIR = serviceBuildDir;
  process.env.TEST_TEMPORAL_ADDRESS = address;
  process.env.TEMPORAL_WORKFLOW_BUNDLE_PATH = bundlePath;
  process.env.TEST_TEMPLATE_DATABASE_URL = templateUrl;
  try {
    await staticChecks;
  } catch (err) {
    // jest runs no global teardown when the setup fails: the server, bundle and databases go now.
    await globalTeardown();
    throw err;
  }
}
