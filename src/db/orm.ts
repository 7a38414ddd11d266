/**
 * Owns the database connection: the MikroORM configuration, creating the database when it
 * is missing, and applying the committed migrations.
 */
import { MikroORM } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { Client } from 'pg';
import { entities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export async function createOrm(databaseUrl: string, poolMax = 10): Promise<Orm> {
  return MikroORM.init({
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    pool: { min: 0, max: poolMax },
    // Entities are declared with EntitySchema, so no reflection or folder discovery is needed.
    discovery: { warnWhenNoEntities: false },
    debug: false,
    allowGlobalContext: false,
    forceUtcTimezone: true,
  });
}

export async function migrate(orm: Orm): Promise<void> {
  await orm.getMigrator().up();
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
    // Two processes racing to create the same database: the loser sees duplicate_database.
    if ((err as { code?: string }).code !== '42P04') throw err;
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
