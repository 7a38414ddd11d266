/**
 * Owns running the migrations when several processes may try at once: replicas that start
 * together with a pending migration, or two `npm run migrate`. MikroORM's migrator has no
 * lock of its own, and two concurrent runs collide in PostgreSQL's catalog (`duplicate key
 * value violates unique constraint "pg_type_typname_nsp_index"` on the first CREATE TABLE).
 *
 * A session-level advisory lock on a connection of its own serializes them: the second
 * waits, then finds nothing pending. Held by a connection, not a row, so a process killed
 * mid-migration releases it with its connection (and its migration transaction rolls back).
 */
import { Client } from 'pg';
import { migrate, type Orm } from './orm';

/** Any fixed 64-bit number shared by every process of the service; "wfa-migr" in ASCII. */
export const MIGRATION_LOCK_KEY = '8603670985874958194';

export async function migrateExclusively(orm: Orm, databaseUrl: string): Promise<void> {
  const lock = new Client({ connectionString: databaseUrl });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    await migrate(orm);
  } finally {
    // Ending the session releases the lock, also when the unlock itself could not be sent.
    await lock.query('select pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await lock.end().catch(() => undefined);
  }
}
