/**
 * Owns the dry-run workflows. `dryRunWorkflow` (id `dry_run:<id>`) replays each named
 * execution as a child `dryRunExecutionWorkflow` (id `dry_run:<id>:<execution id>`),
 * DRY_RUN_CONCURRENCY at a time, then closes the dry run. A child runs the execution walk
 * (`runExecution`) in mode `dry_run`: the same node code, with activities built on a sink
 * that sends and counts nothing, fed with the execution's recorded replies. A child that
 * fails (a node failed: the item records it) does not stop the others.
 */
import { ApplicationFailure, executeChild, proxyActivities } from '@temporalio/workflow';
import type { DryRunActivities } from '../activities/dry-runs.activities';
import { DRY_RUN_CONCURRENCY, dryRunExecutionWorkflowId, type DryRunExecutionInput, type DryRunWorkflowInput } from '../dry-runs.shared';
import type { ExecutionWorkflowResult } from '../executions.shared';
import { runExecution } from './execution.workflow';
import { summaryLine, withSummary } from '../summaries.shared';

const { beginDryRun, planDryRunExecution, finishDryRun, failDryRun } = proxyActivities<DryRunActivities>({
  startToCloseTimeout: '1 minute',
  // Database work only: retried through an outage, as long as it lasts.
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

export async function dryRunWorkflow(input: DryRunWorkflowInput): Promise<void> {
  try {
    const executionIds = await withSummary(beginDryRun, `dry run ${input.dryRunId} · begin`, input.dryRunId);
    for (let i = 0; i < executionIds.length; i += DRY_RUN_CONCURRENCY) {
      await Promise.allSettled(
        executionIds.slice(i, i + DRY_RUN_CONCURRENCY).map((executionId) =>
          executeChild(dryRunExecutionWorkflow, {
            workflowId: dryRunExecutionWorkflowId(input.dryRunId, executionId),
            args: [{ dryRunId: input.dryRunId, executionId }],
            staticSummary: summaryLine(`dry run ${input.dryRunId}`, `replays ${executionId}`),
          }),
        ),
      );
    }
    await withSummary(finishDryRun, `dry run ${input.dryRunId} · finish`, input.dryRunId);
  } catch (err) {
    await withSummary(failDryRun, `dry run ${input.dryRunId} · record failure`, input.dryRunId, err instanceof Error ? err.message : String(err));
    throw ApplicationFailure.nonRetryable(`dry run ${input.dryRunId} failed`, 'DryRunFailed');
  }
}

export async function dryRunExecutionWorkflow(input: DryRunExecutionInput): Promise<ExecutionWorkflowResult> {
  const plan = await withSummary(planDryRunExecution, `dry run ${input.dryRunId} · plan ${input.executionId}`, input);
  return await runExecution(plan.input, { kind: 'dry_run', dryRunId: input.dryRunId, replies: plan.replies });
}
