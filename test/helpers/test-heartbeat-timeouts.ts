/**
 * Workflow interceptor that global-setup.ts bundles into the TEST run's workflow bundle only
 * (a production worker bundles temporal/workflows without it): the two activities that crash
 * tests SIGKILL mid-flight, an export's file generation and a replay batch, get a 5 s
 * heartbeat timeout instead of 20 s and 15 s. Temporal notices a killed worker only when
 * the heartbeat is late, so each such kill costs the tests 5 s of waiting, not 15–20.
 * Both heartbeat at least every second while they work (a replay batch per execution, an
 * export on a 1 s timer), so a live attempt is never taken for a dead one. The activity
 * names are the workflows' (temporal/workflows/export.workflow.ts, replay.workflow.ts).
 *
 * Runs inside the workflow sandbox: imports nothing but @temporalio/workflow types.
 */
import type { ActivityInput, Next, WorkflowInterceptorsFactory, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

export const TEST_HEARTBEAT_TIMEOUT_MS = 5_000;

const SHORTENED = new Set(['generateExportFile', 'replayBatch']);

function scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
  if (!SHORTENED.has(input.activityType) || input.options.heartbeatTimeout === undefined) return next(input);
  return next({ ...input, options: { ...input.options, heartbeatTimeout: TEST_HEARTBEAT_TIMEOUT_MS } });
}

export const interceptors: WorkflowInterceptorsFactory = () => ({ outbound: [{ scheduleActivity }] });
