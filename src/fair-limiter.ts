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
   * While another key is active and `spaced(key)` holds, the key's calls start at least
   * this many ms apart (0 or unset: never).
   */
  spacingMs?: number;
  spaced?: (key: string) => boolean;
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
 * throughput does not change. With `spacingMs`, a key for which `spaced` holds (the API's
 * intake: an organization whose starts are backlogged) also starts its calls that far
 * apart while another key is active.
 */
export class FairLimiter {
  private inFlight = 0;
  /** Waiting callers by key; a Map iterates in insertion order, so re-inserting a key sends it to the back. */
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly held = new Map<string, number>();
  /** When each key last started or finished a call (performance.now()). */
  private readonly lastActive = new Map<string, number>();
  /** When each key last took a slot, kept while its spacing runs (performance.now()). */
  private readonly lastTaken = new Map<string, number>();
  /** Hands over again when the first spaced key's wait is over. */
  private spacingTimer: NodeJS.Timeout | undefined;

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
    // Kept only for a key spaced now, so the keys that never are leave no entry behind.
    if (this.spacedNow(key)) this.lastTaken.set(key, performance.now());
  }

  /** Whether `key`'s calls are to be spaced now (`SharedCap.spacingMs` and `spaced`). */
  private spacedNow(key: string): boolean {
    return !!this.cap?.spacingMs && this.cap.spaced?.(key) !== false;
  }

  private mayTake(key: string): boolean {
    if (this.inFlight >= this.limit) return false;
    if (!this.cap || ((this.held.get(key) ?? 0) < this.cap.share && this.spacingLeft(key) <= 0)) return true;
    return !this.othersActive(key);
  }

  /** How long `key` must still wait for its spacing (≤ 0: none). */
  private spacingLeft(key: string): number {
    const last = this.lastTaken.get(key);
    if (last === undefined || !this.spacedNow(key)) return 0;
    const left = last + this.cap!.spacingMs! - performance.now();
    if (left <= 0) this.lastTaken.delete(key);
    return left;
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
      if (!this.mayTake(key)) {
        const left = this.spacingLeft(key);
        if (left > 0) this.spacingTimer ??= setTimeout(() => ((this.spacingTimer = undefined), this.handOver()), left).unref();
        continue;
      }
      this.waiting.delete(key);
      const first = queue.shift()!;
      if (queue.length > 0) this.waiting.set(key, queue);
      this.take(key);
      first.admit();
    }
  }

  /** Whether calls of `key` wait for a slot now. */
  hasWaiting(key: string): boolean {
    return this.waiting.has(key);
  }

  /** Rejects every waiting caller with `AbandonedError` (they never ran); returns how many. */
  abandonWaiting(): number {
    clearTimeout(this.spacingTimer);
    this.spacingTimer = undefined;
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
