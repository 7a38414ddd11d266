/**
 * Owns how organizations share the Temporal task queue (docs/performance.md, "Fair sharing
 * between organizations"). Every workflow we start for an organization carries the
 * organization's id as its task-queue fairness key; its activities (and children) inherit
 * it. When the queue is backlogged (one organization sent thousands of messages at once),
 * the server dispatches tasks round-robin across keys instead of first in, first out, so
 * another organization's conversation waits behind about one task per busy worker slot,
 * not behind the whole flood. The server needs fairness on (`matching.enableFairness`,
 * docker/temporal-dynamicconfig.yaml); one without it ignores the key.
 *
 * Organization ids are ours (`newId('organization')`), well under the server's 64-byte
 * limit on a key. Pure, so workflow code may import it too.
 */
import type { Priority } from '@temporalio/common';

export function organizationPriority(organizationId: string): Priority {
  return { fairnessKey: organizationId };
}
