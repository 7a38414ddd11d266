/**
 * Owns `debounceBurstWorkflow`: the debouncer of one burst. It asks PostgreSQL whether the
 * burst is due (`closeBurstIfDue`: the database's clock and the burst's row decide, and
 * the same transaction closes it and records its execution), sleeps for the remaining wait
 * when it is not, and asks again. A message that joined meanwhile moved the burst's
 * `last_at`, so the next look finds a later deadline. No signals: the rows are the state,
 * and the timer is durable, so a worker killed mid-burst loses nothing.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { DebounceActivities } from '../activities/debounce.activities';
import type { DebounceBurstInput } from '../debounce.shared';

const acts = proxyActivities<DebounceActivities>({
  // One transaction and one bounded Temporal start (TEMPORAL_CALL_TIMEOUT_MS): a look cut off by a worker's death is retried this soon.
  startToCloseTimeout: '10 seconds',
  // Our own database (or Temporal, for the execution's start) being away is waited out: the burst must close.
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

export async function debounceBurstWorkflow(input: DebounceBurstInput): Promise<{ executionId: string | null }> {
  for (;;) {
    const check = await acts.closeBurstIfDue(input);
    if (check.closed) return { executionId: check.executionId };
    await sleep(Math.max(1, check.waitMs));
  }
}
