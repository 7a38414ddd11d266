/**
 * Workflow interceptor that global-setup.ts bundles into the TEST run's workflow bundle only
 * (a production worker bundles temporal/workflows without it). It shortens two waits the
 * tests would otherwise sit through, nothing else:
 * - the heartbeat timeout of the two activities crash tests SIGKILL mid-flight, an export's
 *   file generation and a replay batch: 5 s instead of 20 s and 15 s. Temporal notices a
 *   killed worker only when the heartbeat is late. Both heartbeat at least every second
 *   while they work (a replay batch per execution, an export on a 1 s timer), so a live
 *   attempt is not taken for a dead one;
 * - the first retry interval of export and report file generation: 100 ms instead of 1 s,
 *   doubling as in production, so an export whose storage refuses every upload fails after
 *   its 5 attempts in under 2 s of waiting instead of 15 s.
 * The activity names are the workflows' (temporal/workflows/export.workflow.ts,
 * replay.workflow.ts). Runs inside the workflow sandbox: imports nothing but types.
 */
import type { ActivityInput, ActivityOptions, Next, WorkflowInterceptorsFactory, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

export const TEST_HEARTBEAT_TIMEOUT_MS = 5_000;
export const TEST_FIRST_RETRY_INTERVAL_MS = 100;

const SHORTER_HEARTBEAT = new Set(['generateExportFile', 'replayBatch']);
const SHORTER_RETRY = new Set(['generateExportFile', 'generateReportFile']);

function testOptions(activityType: string, options: ActivityOptions): ActivityOptions {
  return {
    ...options,
    ...(SHORTER_HEARTBEAT.has(activityType) && options.heartbeatTimeout !== undefined ? { heartbeatTimeout: TEST_HEARTBEAT_TIMEOUT_MS } : {}),
    ...(SHORTER_RETRY.has(activityType) ? { retry: { ...options.retry, initialInterval: TEST_FIRST_RETRY_INTERVAL_MS } } : {}),
  };
}

function scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
  return next({ ...input, options: testOptions(input.activityType, input.options) });
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [{ scheduleActivity }] });
