/**
 * Owns work a request starts but does not wait for: the Temporal start of an execution, or
 * the signal of a reply, after the rows that describe it have committed. Each task is
 * tracked so shutdown waits for it (closeServices), and its failure is logged, never left
 * unhandled. Whatever a task leaves undone (a crash, an outage) is finished by the
 * worker's reconciler, which looks for committed rows without a confirmed start or signal.
 *
 * Tasks that name an organization (`fairKey`) are admitted fairly (src/fair-limiter.ts):
 * as many at once in this process as Temporal answers without a queue building up
 * (src/adaptive-capacity.ts: at most `BACKGROUND_CALLS_IN_FLIGHT`, at least
 * `MIN_CALLS_IN_FLIGHT`), the others waiting in one queue per organization; a free slot goes
 * to the organization with the fewest calls in flight. An organization alone may use every
 * slot; another's call takes the next free one. Without a bound, a flood of messages
 * (accepted far faster than Temporal starts runs) piled up calls that each waited past
 * TEMPORAL_CALL_TIMEOUT_MS, was cut off and fell to the reconciler, where another
 * organization's next conversation waited behind the flood for minutes; with a fixed share
 * per organization, a flood crawled while the machine sat half idle (docs/performance.md,
 * section `fairness`).
 */
import { AdaptiveCapacity } from './adaptive-capacity';
import { AbandonedError, type Admission, FairLimiter, type QueueWatch } from './fair-limiter';
import type { Logger } from './logger';

/** A `QueueWatch` that is also told when its call was dropped at shutdown (`drain`), which waits for it. */
export interface BackgroundWatch extends QueueWatch {
  abandoned(): Promise<void>;
}

/** A task without an organization is never queued behind its own. */
const UNQUEUED: Admission = { backlogged: false };

/** The fewest Temporal calls the capacity keeps in flight: a stalled Temporal holds this many per process until their timeout. */
export const MIN_CALLS_IN_FLIGHT = 4;

/** While the capacity is below its most, how often it is logged (a warning: Temporal is queueing). */
const CAPACITY_REPORT_MS = 10_000;

/** The log line of a reduced capacity; the fairness bench counts it. */
export const CAPACITY_REDUCED_MSG = 'Temporal answers slower than twice its floor: fewer background calls in flight';

export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>();
  private readonly calls: FairLimiter;
  /** How many calls may be in flight now, from their latency (exposed for the logs and tests). */
  readonly capacity: AdaptiveCapacity;

  /** When the reduced capacity was last logged (on the capacity's clock), and whether it is reduced. */
  private reportedAt = Number.NEGATIVE_INFINITY;
  private reduced = false;

  /**
   * `limit`: the most Temporal calls in flight per process, enough to keep a worker busy
   * and few enough that each answers well inside its timeout. `clock`: for tests.
   */
  constructor(
    private readonly logger: Logger,
    private readonly bound: { limit: number; clock?: () => number },
  ) {
    this.capacity = new AdaptiveCapacity({ min: MIN_CALLS_IN_FLIGHT, max: bound.limit, ...(bound.clock ? { clock: bound.clock } : {}) });
    this.calls = new FairLimiter(this.capacity);
  }

  /** Logs a capacity below its most every CAPACITY_REPORT_MS while it lasts, and its return to the most once. */
  private reportCapacity(): void {
    const { limit, floor, recentLatency } = this.capacity;
    if (limit < this.bound.limit) {
      const now = this.capacity.clock();
      if (now - this.reportedAt < CAPACITY_REPORT_MS) return;
      this.reportedAt = now;
      this.reduced = true;
      this.logger.warn({ calls_in_flight: limit, most: this.bound.limit, floor_ms: floor, recent_ms: recentLatency && Math.round(recentLatency) }, CAPACITY_REDUCED_MSG);
    } else if (this.reduced) {
      this.reduced = false;
      this.reportedAt = Number.NEGATIVE_INFINITY;
      this.logger.info({ calls_in_flight: limit }, 'Temporal answers near its floor again: every background call slot in use');
    }
  }

  /**
   * Starts `task` after the current I/O phase, so the answer that triggered it is written
   * first; with `fairKey` (an organization id), admitted by the fair bound, which tells the
   * task whether the organization was backlogged (`Admission`).
   */
  run(what: string, task: (admission: Admission) => Promise<unknown>, fairKey?: string, watch?: BackgroundWatch): void {
    const admitted =
      fairKey === undefined
        ? () => task(UNQUEUED)
        : () => this.calls.run(fairKey, (admission) => (this.onAdmitted?.(), task(admission)), watch).finally(() => this.reportCapacity());
    const done: Promise<void> = new Promise((resolve) => setImmediate(resolve))
      .then(admitted)
      .then(
        () => undefined,
        async (err: unknown) => {
          if (!(err instanceof AbandonedError)) this.logger.warn({ err }, `${what} failed; the reconciler will retry it`);
          else await watch?.abandoned();
        },
      )
      .finally(() => this.running.delete(done));
    this.running.add(done);
  }

  /** How many of the organization's calls wait for a slot now. */
  waitingCalls(organizationId: string): number {
    return this.calls.waitingCount(organizationId);
  }

  /** Told each time a call leaves the wait for a slot (one listener: the API's intake, inbound-state.ts). */
  onAdmitted: (() => void) | undefined;

  /**
   * Resolves once every task started so far has ended. Tasks still waiting for the fair
   * bound are dropped, not run: after a flood they could hold a shutdown for minutes, and
   * the reconciler starts or signals what they leave (their rows are committed).
   */
  async drain(): Promise<void> {
    const abandoned = this.calls.abandonWaiting();
    if (abandoned > 0) this.logger.info({ abandoned }, 'background Temporal calls still queued at shutdown are left to the reconciler');
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
