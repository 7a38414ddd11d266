/**
 * `transactionalRetrying` runs a transaction again when PostgreSQL aborted it to break a
 * deadlock or a serialization failure (40P01, 40001: MikroORM's DeadlockException). The
 * aborted attempt rolled back whole and nothing outside the database ran inside it, so
 * running it again is safe. Such aborts are expected: an inbound message and its
 * customer's running execution both update the same analytics rollup rows (row triggers
 * on messages, executions and steps), in an order no single statement controls.
 */
import { DeadlockException, type EntityManager } from '@mikro-orm/postgresql';

const ATTEMPTS = 4;

/**
 * Runs `work` again (up to `attempts` in all, after a short random pause so two conflicting
 * writers do not meet again in step) while it fails with an error `retryable` accepts.
 */
export async function retrying<T>(retryable: (err: unknown) => boolean, work: () => Promise<T>, attempts = ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (!retryable(err) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
    }
  }
}

export function transactionalRetrying<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  return retrying(
    (err) => err instanceof DeadlockException,
    () => em.fork().transactional((tx) => work(tx as EntityManager)),
  );
}

/** A raw `pg` error (the hot pool's) by which PostgreSQL broke a deadlock (40P01) or a serialization conflict (40001). */
export const isDeadlockOrSerialization = (err: unknown) => ['40P01', '40001'].includes((err as { code?: string }).code ?? '');
