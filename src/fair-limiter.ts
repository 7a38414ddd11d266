/**
 * Owns `FairLimiter`: a concurrency bound that serves organizations fairly: the one with
 * the fewest calls in flight first, in turn among equals. The API admits its background
 * Temporal calls through it, under a capacity that adapts to the calls' latency
 * (src/background-tasks.ts, src/adaptive-capacity.ts), and its inbound messages, with a
 * share per organization while several are active (src/modules/inbound/inbound-state.ts;
 * docs/performance.md, section `fairness`).
 */
import type { AdaptiveCapacity } from './adaptive-capacity';

/** How recently another organization must have been active for the process's shared caps to apply. */
export const SHARED_WINDOW_MS = 2_000;

/**
 * While other organizations are active, how many of the bound's slots one organization may
 * hold; alone, it may hold them all. See `FairLimiter`. Used by the intake of inbound
 * messages only: the background calls have no share (a fixed share was a brake on a flood).
 */
export interface SharedCap {
  /** Slots one key may hold while another key has been active within `windowMs`. */
  share: number;
  windowMs: number;
  /**
   * While another key is active and `behind(key)` says so, the key's calls wait (the API's
   * intake: an organization whose starts already wait for a slot); `recheck()` looks again.
   */
  behind?: (key: string) => boolean;
}

/**
 * A concurrency bound whose waiters are served by key, each key's in arrival order: a free
 * slot goes to the waiting key with the fewest calls in flight, and among equals to the
 * one served longest ago (round-robin). So a key that is alone may take every slot (the
 * bound is work-conserving), and a newcomer's call takes the next free slot, ahead of the
 * keys that hold many. Written here because the usual limiters (p-limit, p-queue) serve one
 * FIFO queue, which is exactly the unfairness this is for.
 *
 * The bound is a number, or an `AdaptiveCapacity` that each finished call tells its
 * latency (from admission to its end, on `clock`), and that the bound follows. Each call is
 * told at admission whether its key was backlogged (`Admission`): the API's starts of a
 * flood then yield to other organizations' at the Temporal server too.
 *
 * With a `SharedCap`, a key holds at most `share` slots while another key is active (in
 * flight, waiting, or finished within `windowMs`): the intake records a flooding
 * organization's messages one at a time, so its requests do not take a PostgreSQL backend
 * each. Alone, a key may use every slot. With `behind`, a key that is behind elsewhere (the API's
 * intake: an organization with enough starts waiting already) starts no call while another
 * key is active, until `recheck()` finds it caught up.
 */
export class FairLimiter {
  private inFlight = 0;
  /** Waiting callers by key; a Map iterates in insertion order, so re-inserting a key sends it to the back. */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly held = new Map<string, number>();
  /** When each key last started or finished a call (performance.now()). */
  private readonly lastActive = new Map<string, number>();
  /** Until when each key's calls are taken as backlogged (performance.now()): see `BACKLOG_HOLD_MS`. */
  private readonly backloggedUntil = new Map<string, number>();

  constructor(
    private readonly bound: number | AdaptiveCapacity,
    private readonly cap?: SharedCap,
  ) {}

  private get limit(): number {
    return typeof this.bound === 'number' ? this.bound : this.bound.limit;
  }

  /**
   * `watch` hears when the call has to wait for a slot and when it gets one (never for a
   * call admitted at once); `task` is told whether its key was backlogged when it was admitted.
   */
  async run<T>(key: string, task: (admission: Admission) => Promise<T>, watch?: QueueWatch): Promise<T> {
    this.lastActive.set(key, performance.now());
    let admission: Admission;
    // Waiters of other keys while a slot is free are at their shared cap: this call may pass them.
    if (!this.waiting.has(key) && this.mayTake(key)) admission = this.take(key);
    else {
      watch?.queued();
      admission = await new Promise<Admission>((admit, abandon) => {
        const queue = this.waiting.get(key);
        if (queue) queue.push({ admit, abandon });
        else this.waiting.set(key, [{ admit, abandon }]);
        // Free slots kept from a key at its cap become its own again once the others are quiet.
        this.handOver();
      });
      watch?.admitted();
    }
    const adaptive = typeof this.bound === 'number' ? undefined : this.bound;
    const admittedAt = adaptive?.clock();
    try {
      return await task(admission);
    } finally {
      // Whether the bound was in full use when this call finished: only then may it grow.
      if (adaptive) adaptive.observe(adaptive.clock() - admittedAt!, this.inFlight >= this.limit || this.waiting.size > 0);
      this.inFlight--;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
      this.lastActive.set(key, performance.now());
      this.handOver();
    }
  }

  private take(key: string): Admission {
    this.inFlight++;
    const held = (this.held.get(key) ?? 0) + 1;
    this.held.set(key, held);
    const now = performance.now();
    if (held > BACKLOG_HELD || this.waiting.has(key)) this.backloggedUntil.set(key, now + BACKLOG_HOLD_MS);
    else if ((this.backloggedUntil.get(key) ?? now) <= now) this.backloggedUntil.delete(key);
    return { backlogged: this.backloggedUntil.has(key) };
  }

  private mayTake(key: string): boolean {
    if (this.inFlight >= this.limit) return false;
    if (!this.cap || ((this.held.get(key) ?? 0) < this.cap.share && this.cap.behind?.(key) !== true)) return true;
    return !this.othersActive(key);
  }

  private othersActive(key: string): boolean {
    if (this.held.size > (this.held.has(key) ? 1 : 0)) return true;
    if (this.waiting.size > (this.waiting.has(key) ? 1 : 0)) return true;
    const since = performance.now() - this.cap!.windowMs;
    for (const [other, at] of this.lastActive) {
      if (at < since) this.lastActive.delete(other);
      else if (other !== key) return true;
    }
    return false;
  }

  /**
   * Each free slot goes to the waiting key with the fewest calls in flight (the first of
   * them in line), its oldest caller, the key then to the back of the line; a key at its
   * shared cap is passed over (its own calls in flight hand over again when they finish).
   */
  private handOver(): void {
    while (this.inFlight < this.limit) {
      let next: string | undefined;
      for (const key of this.waiting.keys()) {
        if ((next === undefined || (this.held.get(key) ?? 0) < (this.held.get(next) ?? 0)) && this.mayTake(key)) next = key;
      }
      if (next === undefined) return;
      const queue = this.waiting.get(next)!;
      this.waiting.delete(next);
      const first = queue.shift()!;
      if (queue.length > 0) this.waiting.set(next, queue);
      first.admit(this.take(next));
    }
  }

  /** Hands free slots over again: a key that was `behind` may have caught up. */
  recheck(): void {
    if (this.waiting.size > 0) this.handOver();
  }

  /** How many calls of `key` wait for a slot now. */
  waitingCount(key: string): number {
    return this.waiting.get(key)?.length ?? 0;
  }

  /** Rejects every waiting caller with `AbandonedError` (they never ran); returns how many. */
  abandonWaiting(): number {
    let abandoned = 0;
    for (const queue of this.waiting.values()) for (const waiter of queue) (abandoned++, waiter.abandon(new AbandonedError()));
    this.waiting.clear();
    return abandoned;
  }
}

/** Told when a call waits in the queue and when it leaves it for a slot (see `FairLimiter.run`). */
export interface QueueWatch {
  queued(): void;
  admitted(): void;
}

/**
 * What a call is told when it gets its slot. `backlogged`: other calls of its key still
 * waited, or the key held more than BACKLOG_HELD slots with this one: the key sends calls
 * faster than they are served (a flood), so the work the call starts may yield to others'
 * (the API's Temporal starts: temporal/fairness.shared.ts).
 */
export interface Admission {
  backlogged: boolean;
}

/** Slots a key may hold at once and still have its calls taken as unhurried (see `Admission`): a conversation or two starting together. */
export const BACKLOG_HELD = 2;

/**
 * How long a key stays backlogged after its last backlogged call. Without it, a flood's
 * calls flicker between backlogged and not as its calls in flight rise and fall, and the
 * work of the unhurried ones (Temporal priority 3) overtakes the key's own earlier work
 * still queued at priority 4: a closed loop of 20 conversations of one organization, with 10
 * workflow-task slots, had message → success p50 0.4 s and p99 3.3 s, against 1.1 s and
 * 1.6 s without the priority (docs/performance.md, section `fairness`).
 */
export const BACKLOG_HOLD_MS = 10_000;

interface Waiter {
  admit(admission: Admission): void;
  abandon(err: AbandonedError): void;
}

/** A call that was still waiting for a slot when its limiter gave up its queue. */
export class AbandonedError extends Error {
  constructor() {
    super('abandoned before it ran');
  }
}
