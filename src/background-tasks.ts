/**
 * Owns work a request starts but does not wait for: the Temporal start of an execution, or
 * the signal of a reply, after the rows that describe it have committed. Each task is
 * tracked so shutdown waits for it (closeServices), and its failure is logged, never left
 * unhandled. Whatever a task leaves undone (a crash, an outage) is finished by the
 * worker's reconciler, which looks for committed rows without a confirmed start or signal.
 *
 * Tasks that name an organization (`fairKey`) are admitted fairly: at most
 * `BACKGROUND_CALLS_IN_FLIGHT` at once in this process, the others waiting in one queue per
 * organization, served in turn. Without a bound, a flood of messages (accepted far faster
 * than Temporal starts runs) piled up calls that each waited past TEMPORAL_CALL_TIMEOUT_MS,
 * was cut off and fell to the reconciler, where another organization's next conversation
 * waited behind the flood for minutes (docs/performance.md, "Fair sharing between
 * organizations").
 */
import type { Logger } from './logger';

/** Temporal calls in flight per process: enough to keep a worker busy, few enough that each answers well inside its timeout. */
export const BACKGROUND_CALLS_IN_FLIGHT = 16;

/**
 * A concurrency bound whose waiters are served round-robin by key, each key's in arrival
 * order. Written here because the usual limiters (p-limit, p-queue) serve one FIFO queue,
 * which is exactly the unfairness this is for.
 */
export class FairLimiter {
  private inFlight = 0;
  /** Waiting callers by key; a Map iterates in insertion order, so re-inserting a key sends it to the back. */
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(private readonly limit: number) {}

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    if (this.inFlight < this.limit && this.waiting.size === 0) this.inFlight++;
    else await new Promise<void>((resolve) => this.waiting.set(key, [...(this.waiting.get(key) ?? []), resolve]));
    try {
      return await task();
    } finally {
      this.handOver();
    }
  }

  /** The finished task's slot goes to the first waiting key's oldest caller, and that key to the back of the line. */
  private handOver(): void {
    const next = this.waiting.entries().next();
    if (next.done) {
      this.inFlight--;
      return;
    }
    const [key, queue] = next.value;
    this.waiting.delete(key);
    const [first, ...rest] = queue;
    if (rest.length > 0) this.waiting.set(key, rest);
    first!();
  }
}

export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>();
  private readonly calls = new FairLimiter(BACKGROUND_CALLS_IN_FLIGHT);

  constructor(private readonly logger: Logger) {}

  /**
   * Starts `task` after the current I/O phase, so the answer that triggered it is written
   * first; with `fairKey` (an organization id), admitted by the fair bound.
   */
  run(what: string, task: () => Promise<unknown>, fairKey?: string): void {
    const admitted = fairKey === undefined ? task : () => this.calls.run(fairKey, task);
    const done: Promise<void> = new Promise((resolve) => setImmediate(resolve))
      .then(admitted)
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
