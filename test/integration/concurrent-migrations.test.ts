/**
 * Replicas that start together with a pending migration, or two `npm run migrate` at once:
 * both succeed on a fresh database, and every migration is applied once. (Without the
 * advisory lock the second died on `duplicate key value violates unique constraint
 * "pg_type_typname_nsp_index"`.) Real processes, as they run in production.
 */
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { createOrm, migrate } from '../../src/db/orm';
import { entities } from '../../src/entities';
import { migrationsList } from '../../src/db/migrations';
import { uniqueSuffix } from '../helpers/app';
import { releaseTestDatabase } from '../helpers/test-databases';
import { spawnProcess } from '../helpers/process';

jest.setTimeout(120_000);

describe('migrations run by several processes at once', () => {
  const databaseUrl = `postgresql://postgres@127.0.0.1:5432/wfa_test_migr_${uniqueSuffix()}`.toLowerCase();
  afterAll(async () => {
    await releaseTestDatabase(databaseUrl);
  });

  it('two `npm run migrate` on a fresh database both succeed and apply each migration once', async () => {
    const run = () =>
      spawnProcess(process.execPath, ['--require', 'tsx/cjs', 'scripts/migrate.ts'], {
        cwd: path.resolve(__dirname, '..', '..'),
        env: { DATABASE_URL: databaseUrl },
      });
    const runs = [run(), run()];
    const exits = await Promise.all(runs.map((r) => r.exited));
    for (const [i, r] of runs.entries()) expect({ exit: exits[i]!.code, output: r.lines.join('\n') }).toEqual({ exit: 0, output: expect.stringContaining('Migrations applied.') });

    const db = new PgClient({ connectionString: databaseUrl });
    await db.connect();
    try {
      const applied = await db.query<{ name: string; n: number }>('select name, count(*)::int as n from mikro_orm_migrations group by name');
      expect(applied.rows.map((r) => r.name).sort()).toEqual(migrationsList.map((m) => m.name).sort());
      expect(applied.rows.every((r) => r.n === 1)).toBe(true);
    } finally {
      await db.end();
    }
  });

  it('a database that recorded a migration under its briefly committed name is not migrated twice', async () => {
    const db = new PgClient({ connectionString: databaseUrl });
    await db.connect();
    const orm = await createOrm(entities, databaseUrl, 2);
    try {
      // As a database migrated at 8817842 recorded it (the file carried that name for one landing).
      await db.query("update mikro_orm_migrations set name = 'Migration20261202000300_execution_resets' where name = 'Migration20261202000100_execution_resets'");
      // Running it again would fail: its `alter table executions add column temporal_run_id` exists.
      await migrate(orm);
      const applied = await db.query<{ name: string }>('select name from mikro_orm_migrations');
      expect(applied.rows.map((r) => r.name).sort()).toEqual(migrationsList.map((m) => m.name).sort());
    } finally {
      await orm.close();
      await db.end();
    }
  });
});
