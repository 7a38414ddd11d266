/**
 * Replicas that start together with a pending migration, or two `npm run migrate` at once:
 * both succeed on a fresh database, and every migration is applied once. (Without the
 * advisory lock the second died on `duplicate key value violates unique constraint
 * "pg_type_typname_nsp_index"`.) Real processes, as they run in production.
 */
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { dropDatabase } from '../../src/db/orm';
import { migrationsList } from '../../src/db/migrations';
import { uniqueSuffix } from '../helpers/app';
import { spawnProcess } from '../helpers/process';

jest.setTimeout(120_000);

describe('migrations run by several processes at once', () => {
  const databaseUrl = `postgresql://postgres@127.0.0.1:5432/wfa_test_migr_${uniqueSuffix()}`.toLowerCase();
  afterAll(async () => {
    await dropDatabase(databaseUrl);
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
});
