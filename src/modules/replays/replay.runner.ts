/**
 * Owns one batch of a replay, run by the replay workflow's activity: the next `limit`
 * matching executions after the cursor, each retried through the single retry endpoint's
 * own service code (`ExecutionService.retry`: same rules, same `retry_of` link).
 *
 * Exactly once across a worker kill: the retry's execution id is derived from (replay id,
 * original id), so a second attempt fails on the executions primary key (its transaction,
 * with the workflow.started event and the counter, rolls back) and is counted as started;
 * the outcome row's primary key (replay_id, execution_id) keeps every execution counted once.
 */
import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/postgresql';
import { failpoint } from '../../failpoints';
import { DomainError } from '../../errors';
import { derivedId } from '../../ids';
import type { Services } from '../../services';
import { ExecutionService } from '../executions/execution.service';
import type { ReplayBatchInput, ReplayBatchResult } from '../../../temporal/replays.shared';
import { matchingExecutionsSql } from './replay.filter';
import type { ReplayFilter } from './replay.schemas';
import { endReplay } from './replay.service';

type Outcome = { outcome: 'started'; retryId: string } | { outcome: 'skipped' | 'failed'; code: string; message: string };

const isRunning = async (em: EntityManager, replayId: string) =>
  (await em.execute(`select 1 from replays where id = ? and status = 'running'`, [replayId])).length > 0;

async function retryOnce(svc: ExecutionService, organizationId: string, replayId: string, e: { id: string; workflow_id: string }): Promise<Outcome> {
  const retryId = derivedId('execution', replayId, e.id);
  try {
    await svc.retry(organizationId, e.workflow_id, e.id, { retryId });
    return { outcome: 'started', retryId };
  } catch (err) {
    // Started by an attempt that died before recording its outcome.
    if (err instanceof UniqueConstraintViolationException) return { outcome: 'started', retryId };
    if (err instanceof DomainError && err.kind !== 'unavailable') {
      if (err.code === 'EXECUTION_NOT_RETRYABLE') return { outcome: 'skipped', code: err.code, message: err.message };
      // The single retry's other refusals (workflow deleted or not active) are the replay's failures.
      return { outcome: 'failed', code: err.code, message: err.message };
    }
    throw err; // Infrastructure: the activity retries the batch.
  }
}

/** `heartbeat` is called before each execution, so Temporal notices a killed worker within the heartbeat timeout. */
export async function runReplayBatch(services: Services, input: ReplayBatchInput, heartbeat: () => void = () => {}): Promise<ReplayBatchResult> {
  const em = services.orm.em.fork() as EntityManager;
  const [replay] = await em.execute<Array<{ filter: ReplayFilter; cutoff: string; status: string }>>(
    'select filter, cutoff::text as cutoff, status from replays where id = ? and organization_id = ?',
    [input.replayId, input.organizationId],
  );
  if (!replay || replay.status !== 'running') return { cursor: input.cursor, processed: 0, done: true };

  const m = matchingExecutionsSql(input.organizationId, replay.cutoff, replay.filter);
  const after = input.cursor ? ' and (e.started_at, e.id) > (?::timestamptz, ?)' : '';
  const rows = await em.execute<Array<{ id: string; workflow_id: string; started_at: string }>>(
    `select e.id, e.workflow_id, e.started_at::text as started_at from executions e
      where ${m.where}${after} order by e.started_at, e.id limit ?`,
    [...m.params, ...(input.cursor ? [input.cursor.startedAt, input.cursor.id] : []), input.limit],
  );

  const svc = new ExecutionService(services);
  let processed = 0;
  for (const row of rows) {
    heartbeat();
    // A cancel stops the batch in flight too, not only the next one.
    if (!(await isRunning(em, input.replayId))) return { cursor: input.cursor, processed, done: true };
    const done = await em.execute('select 1 from replay_items where replay_id = ? and execution_id = ?', [input.replayId, row.id]);
    if (done.length === 0) {
      const o = await retryOnce(svc, input.organizationId, input.replayId, row);
      failpoint(services.config, 'replay.after_retry');
      await em.execute(
        `insert into replay_items (replay_id, execution_id, outcome, retry_execution_id, reason_code, reason_message)
         values (?, ?, ?, ?, ?, ?) on conflict (replay_id, execution_id) do nothing`,
        [input.replayId, row.id, o.outcome, o.outcome === 'started' ? o.retryId : null, o.outcome === 'started' ? null : o.code, o.outcome === 'started' ? null : o.message],
      );
    }
    processed++;
  }
  const last = rows.at(-1);
  return { cursor: last ? { startedAt: last.started_at, id: last.id } : input.cursor, processed, done: rows.length < input.limit };
}

/** Marks the replay completed with its `replay.completed` event; false when it was cancelled meanwhile. */
export async function finishReplay(services: Services, replayId: string): Promise<boolean> {
  return await endReplay(services.orm.em.fork() as EntityManager, replayId, 'completed');
}
