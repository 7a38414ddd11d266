/**
 * Owns `connectivityCheckWorkflow`: one activity round trip through whichever worker polls
 * the task queue. The worker tests run it (an operator may too, e.g. with `temporal
 * workflow execute`) to prove that a worker is really executing both workflow and activity
 * tasks. `/readyz` does not run it: it only asks the server (`getSystemInfo`).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ConnectivityActivities } from '../activities/connectivity.activities';
import { withSummary } from '../summaries.shared';

const { ping } = proxyActivities<ConnectivityActivities>({
  // A ping that has not run within seconds means no worker is polling: fail fast so the
  // caller learns it instead of waiting on retries.
  scheduleToCloseTimeout: '10 seconds',
  startToCloseTimeout: '5 seconds',
  retry: { maximumAttempts: 3, initialInterval: '200 milliseconds' },
});

export async function connectivityCheckWorkflow(): Promise<string> {
  return await withSummary(ping, 'connectivity ping');
}
