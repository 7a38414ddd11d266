/** The executions benchmark's baseline: a workflow that runs `steps` no-op activities in sequence. */
import { proxyActivities } from '@temporalio/workflow';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, nonRetryableErrorTypes: [] },
});

export async function bareStepsWorkflow(steps: number): Promise<void> {
  for (let i = 0; i < steps; i++) await noop();
}
