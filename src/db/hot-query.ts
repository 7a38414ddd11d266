/**
 * `hotQuery` runs one parameterized statement on a pg client borrowed from the ORM's own
 * pool, skipping knex's query runner. For the hottest reads (GET by id) that runner cost
 * about as much CPU as the query itself (bench/api.bench.ts: ratio 0.47 → 0.51); everything
 * else keeps using the EntityManager. Placeholders are pg's `$1, $2, …`. A statement with a
 * `name` is prepared once per connection (pg remembers which connections have it); names
 * must be unique per statement text. It needs only the pool, so the global EntityManager
 * will do: no `fork()` per request.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PoolClient } from 'pg';

interface KnexPoolClient {
  acquireConnection(): Promise<PoolClient>;
  releaseConnection(connection: PoolClient): Promise<void>;
}

export async function hotQuery<T>(em: EntityManager, statement: string | { name: string; text: string }, params: unknown[]): Promise<T[]> {
  const pool = (em.getConnection().getKnex() as unknown as { client: KnexPoolClient }).client;
  const connection = await pool.acquireConnection();
  try {
    const query = typeof statement === 'string' ? { text: statement, values: params } : { ...statement, values: params };
    return (await connection.query(query)).rows as T[];
  } finally {
    await pool.releaseConnection(connection);
  }
}
