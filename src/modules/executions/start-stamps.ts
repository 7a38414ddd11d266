/**
 * Stamps `temporal_started_at` of confirmed Temporal starts in batches: one UPDATE for the
 * starts confirmed within 200 ms (execution-id-batch.ts). Used for the starts of
 * inbound messages, which nothing waits on; the stamp only tells the reconciler that a
 * start is confirmed.
 *
 * A stamp lost (the process dies inside the window, PostgreSQL is away) costs nothing but
 * a repeated start: the reconciler starts every unstamped running execution past its grace
 * period, the workflow-id policies make that start return the existing run, and it stamps
 * the row itself.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { HotPool } from '../../db/hot-query';
import type { Logger } from '../../logger';
import { ExecutionIdBatch } from './execution-id-batch';

const STAMP = {
  name: 'executions-stamp-started',
  text: 'update executions set temporal_started_at = now() where id = any($1::text[]) and temporal_started_at is null',
};

export type StartStamps = ExecutionIdBatch;

export const createStartStamps = (pool: HotPool, logger: Logger): StartStamps =>
  new ExecutionIdBatch(pool, logger, STAMP, { windowMs: 200, onFailure: 'could not stamp confirmed starts; the reconciler will' });

/** One confirmed start stamped at once, outside the batch (a phone call's first turn, which the call's next request reads). */
export async function stampStarted(em: EntityManager, executionId: string): Promise<void> {
  await em.getConnection().execute('update executions set temporal_started_at = now() where id = ? and temporal_started_at is null', [executionId]);
}
