/**
 * Owns the database connection: the MikroORM configuration, creating the database when it
 * is missing, and applying the committed migrations. The entity list comes from above
 * (src/entities.ts): this layer imports no module.
 */
import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Client } from 'pg';

export type Orm = MikroORM;

/** Default bound on waiting for a connection; see DATABASE_ACQUIRE_TIMEOUT_MS. */
const ACQUIRE_TIMEOUT_MS = 2_000;

export async function createOrm(
  /** The modules' entity schemas (src/entities.ts). */
  entities: NonNullable<Options['entities']>,
  databaseUrl: string,
  poolMax = 10,
  acquireTimeoutMs = ACQUIRE_TIMEOUT_MS,
): Promise<Orm> {
  return MikroORM.init({
    clientUrl: databaseUrl,
    entities,
    pool: { min: 0, max: poolMax },
    // knex waits 60 s for a pooled connection by default: while PostgreSQL is away every
    // request would hang that long. Bounded, a request fails fast and is answered 503.
    driverOptions: {
      acquireConnectionTimeout: acquireTimeoutMs,
      connection: { connectionTimeoutMillis: acquireTimeoutMs },
      // knex prints every dropped connection to stdout; an outage is logged once by the
      // DependencyMonitor instead. Other knex warnings still show.
      log: { warn: (m: string) => (m.startsWith('Connection Error') ? undefined : console.warn(m)) },
    },
    // Entities are declared with EntitySchema, so no reflection or folder discovery is needed.
    discovery: { warnWhenNoEntities: false },
    debug: false,
    allowGlobalContext: false,
    forceUtcTimezone: true,
  });
}

/**
 * Migration names that were briefly committed under another name: a database migrated then
 * recorded that name, so the record is renamed instead of running the migration twice.
 */
const RENAMED_MIGRATIONS: ReadonlyArray<[recorded: string, name: string]> = [
  ['Migration20261202000300_execution_resets', 'Migration20261202000100_execution_resets'],
];

export async function migrate(orm: Orm): Promise<void> {
  const conn = orm.em.getConnection();
  const [table] = await conn.execute<Array<{ exists: boolean }>>("select to_regclass('mikro_orm_migrations') is not null as exists");
  if (table?.exists) {
    for (const [recorded, name] of RENAMED_MIGRATIONS) await conn.execute('update mikro_orm_migrations set name = ? where name = ?', [name, recorded]);
  }
  // Loaded here, not at the top: the migrator brings umzug and its command-line parser (about
  // 80 ms of module loading), and the migrations their SQL, which a process that does not
  // migrate (a test file on a migrated copy, a replica with MIGRATE_ON_START=false) never needs.
  // `require`, not `import()`: under tsx a dynamic import resolves as ESM, which refuses a directory.
  const { Migrator } = require('@mikro-orm/migrations') as typeof import('@mikro-orm/migrations');
  const { migrationsList } = require('./migrations') as typeof import('./migrations');
  orm.config.set('migrations', { ...orm.config.get('migrations'), migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true });
  await new Migrator(orm.em).up();
}

/**
 * The committed migrations this database has not applied, in order (all of them when it has
 * none), without applying or creating anything: what the operator CLI checks before a
 * command, since only `migrate` migrates.
 */
export async function pendingMigrations(orm: Orm): Promise<string[]> {
  const conn = orm.em.getConnection();
  const { migrationsList } = require('./migrations') as typeof import('./migrations');
  const [table] = await conn.execute<Array<{ exists: boolean }>>("select to_regclass('mikro_orm_migrations') is not null as exists");
  const recorded = table?.exists ? (await conn.execute<Array<{ name: string }>>('select name from mikro_orm_migrations')).map((r) => r.name) : [];
  const renamed = new Map(RENAMED_MIGRATIONS);
  const applied = new Set(recorded.map((name) => renamed.get(name) ?? name));
  return migrationsList.map((m) => m.name).filter((name) => !applied.has(name));
}

/** Creates the database named in the URL if it does not exist (connecting to `postgres`). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`Unsupported database name "${name}"`);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`create database "${name}"`);
  } catch (err) {
    // Two processes racing to create the same database: the loser sees duplicate_database,
    // or unique_violation on pg_database when both passed the check at the same moment.
    if (!['42P04', '23505'].includes((err as { code?: string }).code ?? '')) throw err;
  } finally {
    await client.end();
  }
}

export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(`drop database if exists "${name}" with (force)`);
  } finally {
    await client.end();
  }
}
