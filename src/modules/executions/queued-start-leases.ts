/**
 * Leases the executions whose Temporal start waits in this API process's fair queue
 * (src/fair-limiter.ts), so that the worker's reconciler leaves them to the queue.
 *
 * Why: while Temporal is busy, a flooding organization's starts wait for
 * a slot among the API's Temporal calls, often longer than EXECUTION_RECONCILE_GRACE_MS. The
 * reconciler then took the oldest of them, 100 a pass, one after the other as fast as
 * Temporal answered: every ~7 s a burst of runs that took both cores, and the other
 * organizations' conversations waited behind each burst. The flood's own pace did not
 * change: the queue's calls for those rows found them started (docs/performance.md,
 * "A flood's requests, and the reconciler's bursts").
 *
 * A lease is the reconciler's own claim column (`start_claimed_until`), which its claim
 * statement skips. A start that begins waiting is leased within FLUSH_MS (inside the
 * grace), and the starts still waiting are renewed every third of LEASE_MS. Once a start
 * leaves the queue for its slot it is no longer renewed: its stamp or the lease's lapse
 * ends the lease. So the reconciler gets every row back within LEASE_MS, whatever happens
 * to this process: at shutdown the waiting calls are dropped and their leases given back at
 * once (`abandoned`), and a SIGKILLed process's leases lapse. A start that fails after
 * leaving the queue (Temporal slow) is retried when its lease lapses, at most LEASE_MS
 * later than without one. A lease written over a reconciler's claim costs nothing: a
 * second start of a row finds its run (the workflow id is the row's).
 */
import type { BackgroundWatch } from '../../background-tasks';
import { type HotPool, hotQuery } from '../../db/hot-query';
import type { Logger } from '../../logger';
import { ExecutionIdBatch } from './execution-id-batch';

/** How long a waiting start's lease keeps the reconciler off its row unless renewed. */
const LEASE_MS = 15_000;
/** How soon a start that began waiting is leased: well inside the reconciler's grace (5 s by default). */
const FLUSH_MS = 1_000;

const LEASE = {
  name: 'executions-lease-queued-starts',
  text: `update executions set start_claimed_until = now() + ($2 * interval '1 millisecond')
          where id = any($1::text[]) and temporal_started_at is null`,
};
const RELEASE = {
  name: 'executions-release-queued-starts',
  text: 'update executions set start_claimed_until = null where id = any($1::text[]) and temporal_started_at is null',
};

export class QueuedStartLeases {
  /** The executions whose start waits in the queue now. */
  private readonly waiting = new Set<string>();
  /** Of those, the ones not leased yet. */
  private fresh: string[] = [];
  private lastRenewal = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Gives back the leases of the starts one drain dropped, in one statement. */
  private readonly releases: ExecutionIdBatch;

  constructor(
    private readonly pool: HotPool,
    private readonly logger: Logger,
  ) {
    this.releases = new ExecutionIdBatch(pool, logger, RELEASE, {
      windowMs: 0,
      onFailure: 'could not give back the leases of dropped starts; the reconciler takes them when they lapse',
    });
  }

  /** The watch of one execution's start (`BackgroundTasks.run`). */
  watch(executionId: string): BackgroundWatch {
    return {
      queued: () => {
        this.waiting.add(executionId);
        this.fresh.push(executionId);
        this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
      },
      admitted: () => {
        this.waiting.delete(executionId);
      },
      abandoned: () => {
        this.waiting.delete(executionId);
        return this.releases.add(executionId);
      },
    };
  }

  /** Leases the rows that began waiting; every third of LEASE_MS, renews all that still wait. */
  private async flush(): Promise<void> {
    this.timer = undefined;
    const renewAll = performance.now() - this.lastRenewal >= LEASE_MS / 3;
    const ids = renewAll ? [...this.waiting] : this.fresh.filter((id) => this.waiting.has(id));
    this.fresh = [];
    if (renewAll) this.lastRenewal = performance.now();
    if (ids.length > 0) {
      await hotQuery(this.pool, LEASE, [ids, LEASE_MS]).catch((err: unknown) =>
        this.logger.warn({ err, executions: ids.length }, 'could not lease the starts waiting in the queue; the reconciler may start them first'),
      );
    }
    if (this.waiting.size > 0) this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }
}
