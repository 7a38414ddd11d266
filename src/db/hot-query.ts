/**
 * The hottest statements (GET by id, the API-key refresh, a webhook delivery attempt's read
 * and log row) run one parameterized statement each on a small `pg` Pool of their own,
 * skipping both knex's query runner and its pool. The runner cost about as
 * much CPU as the query itself (bench/api.bench.ts: ratio 0.47 → 0.51); knex's pool
 * (tarn) then cost each acquire a pending-operation object, a timeout timer and three
 * promises, plus a promise per release: with pg's own pool an acquire from the idle list
 * is a callback. Everything else keeps using the EntityManager.
 *
 * Why a second pool rather than the ORM's: knex cannot use a `pg` Pool, and borrowing
 * connections from tarn is what cost. The pool is opened with the ORM's own connection
 * settings (same database, same type parsers: timestamps arrive as strings) and the same
 * acquire timeout; `pg` opens connections only on demand and closes them after 30 s idle.
 * Cost: up to `max` more connections per process (DATABASE_POOL_MAX, so at most twice that
 * in all), opened only when one of these statements runs.
 *
 * Placeholders are pg's `$1, $2, …`. Every statement is named, so it is prepared once per
 * connection (pg remembers which connections have it); names must be unique per statement
 * text.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Pool, type PoolConfig } from 'pg';
import type { Logger } from 'pino';

export type HotPool = Pool;

export function createHotPool(orm: MikroORM, options: { max: number; acquireTimeoutMs: number; logger: Logger }): HotPool {
  const settings = orm.em.getConnection().getKnex().client.connectionSettings as PoolConfig;
  const pool = new Pool({
    ...settings,
    max: options.max,
    // Waiting for a connection (or opening one) is bounded like the ORM's: while PostgreSQL
    // is away a request fails fast and is answered 503 (src/failures.ts knows the message).
    connectionTimeoutMillis: options.acquireTimeoutMs,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that dies (PostgreSQL restarted) is dropped by the pool; without a
  // listener the 'error' event would end the process. Outages are reported by the
  // DependencyMonitor once, from the failing requests, so this is only a debug line.
  pool.on('error', (err) => options.logger.debug({ err: err.message }, 'hot-query pool: idle connection lost'));
  return pool;
}

export async function hotQuery<T>(pool: HotPool, statement: { name: string; text: string }, params: unknown[]): Promise<T[]> {
  return (await pool.query({ name: statement.name, text: statement.text, values: params })).rows as T[];
}

/**
 * A CTE body with knex's `?` bindings, composed into another module's statement (as is, or
 * numbered with `numberedPlaceholders(sql, first)` into a named one).
 */
export interface SqlFragment {
  sql: string;
  bindings: unknown[];
}

/** What running one SQL text needs: `em.execute`, or `hotExecutor` on the hot pool. */
export type SqlRunner = Pick<EntityManager, 'execute'>;

/** The named statements of the SQL texts `hotExecutor` has run: one per distinct text, for the process's life. */
const statementsByText = new Map<string, { name: string; text: string }>();

/**
 * knex's `?` placeholders as pg's `$1, $2, …`, outside quoted literals and identifiers
 * (written here because knex's own conversion is bound to its query runner, which is the
 * cost this module avoids). Every `?` is a binding, as in knex: no `?` operators of jsonb.
 */
export function numberedPlaceholders(sql: string, first = 1): string {
  let n = first - 1;
  let quote: string | null = null;
  let out = '';
  for (const ch of sql) {
    if (quote) {
      if (ch === quote) quote = null;
    } else if (ch === "'" || ch === '"') quote = ch;
    else if (ch === '?') {
      out += `$${++n}`;
      continue;
    }
    out += ch;
  }
  return out;
}

/**
 * `em.execute(sql, params)` for the statements a run writes at every step (node state, sent
 * step, finish), on the hot pool as named statements: no knex runner, and PostgreSQL plans
 * each text once per connection (the step and finish statements are the longest the
 * service runs). Same SQL, same bindings, same rows as through the EntityManager.
 */
export function hotExecutor(pool: HotPool): SqlRunner {
  return {
    async execute(query: unknown, params: unknown[] = []) {
      if (typeof query !== 'string') throw new TypeError('hotExecutor runs SQL text only');
      let statement = statementsByText.get(query);
      if (!statement) {
        statement = { name: `hot-${statementsByText.size + 1}`, text: numberedPlaceholders(query) };
        statementsByText.set(query, statement);
      }
      return (await pool.query({ ...statement, values: params })).rows as never;
    },
  } as SqlRunner;
}
