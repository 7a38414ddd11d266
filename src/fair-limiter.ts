/**
 * Owns `FairLimiter`: a concurrency bound that serves organizations in turn and, while
 * several are active, holds each to a share. The API admits its background Temporal calls
 * through it (src/background-tasks.ts; docs/performance.md, "Fair sharing between
 * organizations").
 */

/** How recently another organization must have been active for the process's shared caps to apply. */
export const SHARED_WINDOW_MS = 2_000;

/**
 * While other organizations are active, how many of the bound's slots one organization may
 * hold; alone, it may hold them all. See `FairLimiter`.
 */
export interface SharedCap {
  /** Slots one key may hold while another key has been active within `windowMs`. */
  share: number;
  windowMs: number;
  /**
   * While another key is active and `behind(key)` says so, the key's calls wait (the API's
   * intake: an organization whose starts already wait for its share); `recheck()` looks again.
   */
  behind?: (key: string) => boolean;
}

/**
 * A concurrency bound whose waiters are served round-robin by key, each key's in arrival
 * order. Written here because the usual limiters (p-limit, p-queue) serve one FIFO queue,
 * which is exactly the unfairness this is for.
 *
 * With a `SharedCap`, a key holds at most `share` slots while another key is active (in
 * flight, waiting, or finished within `windowMs`): a flooding organization then keeps
 * fewer calls in flight at Temporal, and the server's queues, which serve calls in arrival
 * order, stay short for the others. Alone, a key may use every slot, so one organization's
 * throughput does not change. With `behind`, a key that is behind elsewhere (the API's
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

  constructor(
    private readonly limit: number,
    private readonly cap?: SharedCap,
  ) {}

  /** `watch` hears when the call has to wait for a slot and when it gets one (never for a call admitted at once). */
  async run<T>(key: string, task: () => Promise<T>, watch?: QueueWatch): Promise<T> {
    this.lastActive.set(key, performance.now());
    // Waiters of other keys while a slot is free are at their shared cap: this call may pass them.
    if (!this.waiting.has(key) && this.mayTake(key)) this.take(key);
    else {
      watch?.queued();
      await new Promise<void>((admit, abandon) => {
        const queue = this.waiting.get(key);
        if (queue) queue.push({ admit, abandon });
        else this.waiting.set(key, [{ admit, abandon }]);
        // Free slots kept from a key at its cap become its own again once the others are quiet.
        this.handOver();
      });
      watch?.admitted();
    }
    try {
      return await task();
    } finally {
      this.inFlight--;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
      this.lastActive.set(key, performance.now());
      this.handOver();
    }
  }

  private take(key: string): void {
    this.inFlight++;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
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
   * Free slots go to the waiting keys in turn, each its oldest caller, the key then to the
   * back of the line; a key at its shared cap is passed over (its own calls in flight hand
   * over again when they finish).
   */
  private handOver(): void {
    for (const [key, queue] of this.waiting) {
      if (this.inFlight >= this.limit) return;
      if (!this.mayTake(key)) continue;
      this.waiting.delete(key);
      const first = queue.shift()!;
      if (queue.length > 0) this.waiting.set(key, queue);
      this.take(key);
      first.admit();
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

interface Waiter {
  admit(): void;
  abandon(err: AbandonedError): void;
}

/** A call that was still waiting for a slot when its limiter gave up its queue. */
export class AbandonedError extends Error {
  constructor() {
    super('abandoned before it ran');
  }
}
