/**
 * Owns the end of the run's test databases. A file's database is not dropped when the file
 * ends but with all the others in the global teardown: every `DROP DATABASE` makes
 * PostgreSQL run an immediate checkpoint and wait for it, and during a full run the ~110
 * drops forced 93 checkpoints that wrote about 1 GB of the other files' dirty pages
 * (125,000 buffers; each file's `afterAll` waited for one). A dropped database's own pages are discarded,
 * never written, so at the end, with the files done, the drops cost little. Names carry the
 * run's id (`uniqueSuffix`), which is how the teardown finds them.
 */
import { Client } from 'pg';
import { dropDatabase } from '../../src/db/orm';

const ADMIN_URL = 'postgresql://postgres@127.0.0.1:5432/postgres';
/** Drops at once in the teardown: their checkpoints coalesce. */
const DROPS_AT_ONCE = 8;

const runId = () => process.env.TEST_RUN_ID;

/** The database a URL names. */
export const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));

/** Whether this database belongs to the run under way (named with its id), so the teardown drops it. */
function ofThisRun(name: string, id = runId()): boolean {
  return id !== undefined && (name.includes(`_${id}_`) || name.endsWith(`_${id}`));
}

/** A test's database is done: left to the run's teardown when the run has one, else dropped now (a file run outside jest's global setup). */
export async function releaseTestDatabase(databaseUrl: string): Promise<void> {
  if (!ofThisRun(databaseName(databaseUrl))) await dropDatabase(databaseUrl);
}

/** Drops every database of the run `id` (global-teardown.ts). */
export async function dropRunDatabases(id: string): Promise<void> {
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  let names: string[];
  try {
    names = (await admin.query<{ datname: string }>(`select datname from pg_database where datname like 'wfa\\_%'`)).rows.map((r) => r.datname).filter((n) => ofThisRun(n, id));
  } finally {
    await admin.end();
  }
  for (let i = 0; i < names.length; i += DROPS_AT_ONCE) {
    await Promise.all(names.slice(i, i + DROPS_AT_ONCE).map((name) => dropDatabase(`postgresql://postgres@127.0.0.1:5432/${name}`)));
  }
}
