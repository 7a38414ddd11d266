/**
 * Owns how organizations share the Temporal task queue (docs/performance.md, "Fair sharing
 * between organizations"). Every workflow we start for an organization carries the
 * organization's id as its task-queue fairness key; its activities (and children) inherit
 * it. When the queue is backlogged (one organization sent thousands of messages at once),
 * the server dispatches tasks round-robin across keys instead of first in, first out, so
 * another organization's conversation waits behind about one task per busy worker slot,
 * not behind the whole flood. The server needs fairness on (`matching.enableFairness`,
 * docker/temporal-dynamicconfig.yaml); one without it ignores the key. A run started while
 * its organization was backlogged in the API, or by the reconciler as one of an
 * organization's lost backlog (starts/durable-start.ts), also carries a lower priority
 * (BACKLOGGED_PRIORITY_KEY), which the server honours before fairness: other
 * organizations' tasks skip the flood's instead of taking turns with it.
 *
 * Organization ids are ours (`newId('organization')`), well under the server's 64-byte
 * limit on a key. Pure, so workflow code may import it too.
 */
import type { Priority } from '@temporalio/common';

/**
 * The priority of a run started while its organization was backlogged (its conversations
 * arrive faster than they start: src/fair-limiter.ts `Admission`): below the default (3)
 * that every other run has, so the server dispatches other organizations' waiting tasks
 * first, and the flood's runs among themselves by fairness key. Its activities inherit it.
 * Temporal orders priorities strictly; the flood loses nothing while no one else waits.
 */
export const BACKLOGGED_PRIORITY_KEY = 4;

export function organizationPriority(organizationId: string, opts: { backlogged?: boolean } = {}): Priority {
  return { fairnessKey: organizationId, ...(opts.backlogged ? { priorityKey: BACKLOGGED_PRIORITY_KEY } : {}) };
}
