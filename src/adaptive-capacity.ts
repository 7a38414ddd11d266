/**
 * Owns `AdaptiveCapacity`: how many calls to one server (the API's background Temporal
 * calls, src/background-tasks.ts) may be in flight at once, found from the calls' own
 * latency instead of a fixed count (docs/performance.md, section `fairness`).
 *
 * Why latency: a server answers a few calls in flight about as fast as one; past the
 * point where it is busy, more calls in flight only wait in its queue (which serves in
 * arrival order, whoever sent them) and every call's latency rises above the server's
 * idle floor. So the capacity grows by one per round trip while it is used in full and
 * the calls answer within `tolerance` × the floor, and is cut by a fifth (at most once
 * per round trip) while they answer slower. On an idle server a single organization gets
 * every slot up to `max`; on a busy one the queue at the server stays a few calls long, so
 * another organization's call, served first by the fair queue in front of it
 * (src/fair-limiter.ts), waits behind a few calls, not a flood. Written here because the
 * limiter libraries for Node we know of (p-limit, p-queue, bottleneck) take a fixed
 * concurrency or rate.
 *
 * The floor is the lowest latency seen within `floorWindowMs` (two half-windows), so it
 * follows the server if it moves, and the recent latency an exponential average of the
 * last calls. The clock is injectable for tests.
 */

/** How much of each new latency the recent average takes. */
const SMOOTHING = 0.2;
/** What a cut leaves of the capacity. */
const CUT = 0.8;
/** A floor below this is taken as this: jitter of a millisecond is not a queue. */
const MIN_FLOOR_MS = 1;

export interface AdaptiveCapacityOptions {
  /** Never fewer calls in flight: a stalled server holds this many until their timeout. */
  min: number;
  /** Never more (and where it starts): the bound the process was configured with. */
  max: number;
  /** A recent latency above floor × tolerance is taken as a queue at the server (default 2). */
  tolerance?: number;
  /** How long the lowest latency seen remains the floor (default 60 s). */
  floorWindowMs?: number;
  /** Milliseconds, monotonic (default `performance.now`). */
  clock?: () => number;
}

export class AdaptiveCapacity {
  private value: number;
  private recent: number | undefined;
  private floorHalf = { since: Number.NEGATIVE_INFINITY, min: Number.POSITIVE_INFINITY };
  private floorBefore = Number.POSITIVE_INFINITY;
  private lastCut = Number.NEGATIVE_INFINITY;
  private readonly min: number;
  private readonly max: number;
  private readonly tolerance: number;
  private readonly floorWindowMs: number;
  readonly clock: () => number;

  constructor(opts: AdaptiveCapacityOptions) {
    this.max = Math.max(1, opts.max);
    this.min = Math.min(Math.max(1, opts.min), this.max);
    this.value = this.max;
    this.tolerance = opts.tolerance ?? 2;
    this.floorWindowMs = opts.floorWindowMs ?? 60_000;
    this.clock = opts.clock ?? (() => performance.now());
  }

  /** Calls that may be in flight now. */
  get limit(): number {
    return Math.floor(this.value);
  }

  /** The lowest latency seen within the window (ms), once a call has finished. */
  get floor(): number | undefined {
    const floor = Math.min(this.floorHalf.min, this.floorBefore);
    return Number.isFinite(floor) ? Math.max(floor, MIN_FLOOR_MS) : undefined;
  }

  /** The recent latency (ms), an average that follows the last calls. */
  get recentLatency(): number | undefined {
    return this.recent;
  }

  /**
   * One call's latency. `saturated`: every slot was in use when it finished, or callers
   * waited for one; only then may the capacity grow (a capacity nobody uses proves nothing).
   */
  observe(latencyMs: number, saturated: boolean): void {
    const now = this.clock();
    this.rollFloor(now);
    this.floorHalf.min = Math.min(this.floorHalf.min, latencyMs);
    this.recent = this.recent === undefined ? latencyMs : this.recent + SMOOTHING * (latencyMs - this.recent);
    if (this.recent > this.floor! * this.tolerance) {
      // Once per round trip: the calls that finish just after a cut were sent before it.
      if (now - this.lastCut >= this.recent) {
        this.value = Math.max(this.min, this.value * CUT);
        this.lastCut = now;
      }
    } else if (saturated) this.value = Math.min(this.max, this.value + 1 / this.value);
  }

  private rollFloor(now: number): void {
    const half = this.floorWindowMs / 2;
    if (now - this.floorHalf.since < half) return;
    // The half-window that just ended becomes the older one, unless a whole window passed.
    this.floorBefore = now - this.floorHalf.since < 2 * half ? this.floorHalf.min : Number.POSITIVE_INFINITY;
    this.floorHalf = { since: now, min: Number.POSITIVE_INFINITY };
  }
}
