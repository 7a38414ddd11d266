/**
 * Owns work a request starts but does not wait for: the Temporal start of an execution, or
 * the signal of a reply, after the rows that describe it have committed. Each task is
 * tracked so shutdown waits for it (closeServices), and its failure is logged, never left
 * unhandled. Whatever a task leaves undone (a crash, an outage) is finished by the
 * worker's reconciler, which looks for committed rows without a confirmed start or signal.
 */
import type { Logger } from './logger';

export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly logger: Logger) {}

  /** Starts `task` after the current I/O phase, so the answer that triggered it is written first. */
  run(what: string, task: () => Promise<unknown>): void {
    const done: Promise<void> = new Promise((resolve) => setImmediate(resolve))
      .then(task)
      .then(
        () => undefined,
        (err: unknown) => this.logger.warn({ err }, `${what} failed; the reconciler will retry it`),
      )
      .finally(() => this.running.delete(done));
    this.running.add(done);
  }

  /** Resolves once every task started so far has ended. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
