/**
 * Creates the database if missing and applies the committed migrations; several at once
 * (replicas, a deploy Job) take turns (src/db/migration-lock.ts).
 */
import { loadConfig } from '../src/config';
import { migrateExclusively } from '../src/db/migration-lock';
import { createOrm, ensureDatabase } from '../src/db/orm';
import { entities } from '../src/entities';

async function main() {
  const config = loadConfig();
  await ensureDatabase(config.DATABASE_URL);
  const orm = await createOrm(entities, config.DATABASE_URL, 2);
  try {
    await migrateExclusively(orm, config.DATABASE_URL);
    process.stdout.write('Migrations applied.\n');
  } finally {
    await orm.close(true);
  }
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
