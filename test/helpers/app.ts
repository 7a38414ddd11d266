/**
 * Boots the real app for a test file: a fresh PostgreSQL database (dropped at the end), a
 * Redis key prefix of its own, the shared Temporal dev server, and helpers to mint keys.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as PgClient } from 'pg';
import supertest from 'supertest';
import { type ApiServices, createApiServices, createApp } from '../../src/app';
import { answerClientErrors } from '../../src/http/client-errors';
import { type Config, loadConfig } from '../../src/config';
import { createOrm, ensureDatabase, migrate } from '../../src/db/orm';
import { entities } from '../../src/entities';
import type { Permission } from '../../src/credentials/scopes';
import { ApiKeyService } from '../../src/modules/api-keys/api-key.service';
import type { Logger } from '../../src/logger';
import { closeServices, createServices } from '../../src/services';
import { databaseName, releaseTestDatabase } from './test-databases';

export const uniqueSuffix = () => `${process.env.TEST_RUN_ID ?? 'local'}_${randomBytes(4).toString('hex')}`;

/**
 * Creates `targetUrl`'s database as a copy of the run's migrated template (global-setup.ts):
 * much faster than migrating each file's database from scratch.
 */
async function copyDatabase(templateUrl: string, targetUrl: string): Promise<void> {
  const admin = new URL(targetUrl);
  admin.pathname = '/postgres';
  const client = new PgClient({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`create database "${databaseName(targetUrl)}" template "${databaseName(templateUrl)}"`);
  } finally {
    await client.end();
  }
}

export interface TestApp {
  services: ApiServices;
  config: Config;
  request: ReturnType<typeof supertest>;
  /** Base URL of a real listening server, for clients other than supertest. */
  baseUrl: string;
  databaseUrl: string;
  /** Runs SQL against the test database (knex-style `?` placeholders). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  createOrg(name?: string): Promise<string>;
  createKey(permission: Permission, organizationId?: string): Promise<{ key: string; id: string; organizationId: string }>;
  close(): Promise<void>;
}

export async function createTestApp(env: Record<string, string> = {}, opts: { logger?: Logger } = {}): Promise<TestApp> {
  const suffix = uniqueSuffix();
  // A second app on the same database (another "process") passes DATABASE_URL; only the owner drops it.
  const ownsDatabase = env.DATABASE_URL === undefined;
  const databaseUrl = env.DATABASE_URL ?? `postgresql://postgres@127.0.0.1:5432/wfa_test_${suffix}`.toLowerCase();
  const templateUrl = process.env.TEST_TEMPLATE_DATABASE_URL;
  // A copy of the template is migrated already (global-setup.ts): migrating it again would only
  // load the migrator and read its table, in every test file.
  const copied = ownsDatabase && templateUrl !== undefined;
  if (copied) await copyDatabase(templateUrl, databaseUrl);
  else await ensureDatabase(databaseUrl);
  // Listen first, so that the public base URL (the OAuth issuer, trigger URLs) is the real address.
  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_MAX: '5',
    // A connection waited for longer than production's 2 s is a 503 the test would count as
    // a failure: on a loaded 2-core machine a commit can stall that long (a full run in CI
    // had one message and one webhook answered 503 from a busy pool). Tests of the timeout
    // itself set their own (test/integration/errors/error-codes.cases.ts).
    DATABASE_ACQUIRE_TIMEOUT_MS: '10000',
    // The same for a Temporal start: production's 1 s cut-off leaves the start to the worker's
    // reconciler, which an in-process test worker does not run, so a start the loaded dev
    // server answers late would never happen (a CI run's S3 export waited 60 s for one).
    // Tests of the cut-off set their own (test/executions/starts/start-confirmation.cases.ts).
    TEMPORAL_CALL_TIMEOUT_MS: '10000',
    REDIS_KEY_PREFIX: `wfa-test:${suffix}:`,
    TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    TEMPORAL_TASK_QUEUE: `wfa-test-${suffix}`,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    PUBLIC_BASE_URL: baseUrl,
    ...env,
  });
  const orm = await createOrm(entities, databaseUrl, 5, config.DATABASE_ACQUIRE_TIMEOUT_MS);
  if (!copied) await migrate(orm);
  const services = await createApiServices(await createServices(config, { orm, ...(opts.logger ? { logger: opts.logger } : {}) }));
  const { app } = createApp(services);
  server.on('request', app.callback());
  answerClientErrors(server, services.logger);
  let defaultOrg: string | undefined;

  const createOrg = async (name = `org-${uniqueSuffix()}`) => {
    return (await new ApiKeyService(orm.em.fork()).ensureOrganization(name)).id;
  };

  return {
    services,
    config,
    request: supertest(server),
    baseUrl,
    databaseUrl,
    createOrg,
    query: async <T,>(sql: string, params: unknown[] = []) => (await orm.em.getConnection().execute(sql, params)) as T[],
    async createKey(permission, organizationId) {
      const orgId = organizationId ?? (defaultOrg ??= await createOrg());
      const { apiKey, key } = await new ApiKeyService(orm.em.fork()).create(orgId, `${permission} key`, permission);
      return { key, id: apiKey.id, organizationId: orgId };
    },
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeServices(services);
      if (ownsDatabase) await releaseTestDatabase(databaseUrl);
    },
  };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
