/**
 * Owns `connectivityCheckWorkflow`: one activity round trip through whichever worker polls
 * the task queue. `/readyz` deep checks and the worker tests run it to prove that a worker
 * is really executing both workflow and activity tasks, not merely that the server answers.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { ConnectivityActivities } from '../activities/connectivity.activities';

const { ping } = proxyActivities<ConnectivityActivities>({
  // A ping that has not run within seconds means no worker is polling: fail fast so a
  // readiness probe reports it instead of waiting on retries.
  scheduleToCloseTimeout: '10 seconds',
  startToCloseTimeout: '5 seconds',
  retry: { maximumAttempts: 3, initialInterval: '200 milliseconds' },
});

export async function connectivityCheckWorkflow(): Promise<string> {
  return await ping();
}
