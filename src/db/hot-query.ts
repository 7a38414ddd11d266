/**
 * `hotQuery` runs one parameterized statement on a pg client borrowed from the ORM's own
 * pool, skipping knex's query runner. For the hottest reads (GET by id) that runner cost
 * about as much CPU as the query itself (bench/api.bench.ts: ratio 0.47 → 0.51); everything
 * else keeps using the EntityManager. Placeholders are pg's `$1, $2, …`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PoolClient } from 'pg';

interface KnexPoolClient {
  acquireConnection(): Promise<PoolClient>;
  releaseConnection(connection: PoolClient): Promise<void>;
}

export async function hotQuery<T>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  const pool = (em.getConnection().getKnex() as unknown as { client: KnexPoolClient }).client;
  const connection = await pool.acquireConnection();
  try {
    return (await connection.query(sql, params)).rows as T[];
  } finally {
    await pool.releaseConnection(connection);
  }
}
