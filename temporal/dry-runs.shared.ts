/**
 * Owns the Temporal names of dry runs: the workflow types and ids and the I/O shared by
 * the API (which starts the parent), the workflows and their activities. Imported by
 * workflow code: nothing but plain types and the execution workflow's shared names.
 */
import type { CustomerReply, ExecutionWorkflowInput } from './executions.shared';

export const DRY_RUN_WORKFLOW_TYPE = 'dryRunWorkflow';

/** One parent per dry run; the dry run id is new, so a second start of it is a bug. */
export const dryRunWorkflowId = (dryRunId: string) => `dry_run:${dryRunId}`;

/** One child per replayed execution, so each conversation has its own (small) history. */
export const dryRunExecutionWorkflowId = (dryRunId: string, executionId: string) => `dry_run:${dryRunId}:${executionId}`;

/** Executions replayed at the same time within one dry run. */
export const DRY_RUN_CONCURRENCY = 10;

export interface DryRunWorkflowInput {
  dryRunId: string;
}

export interface DryRunExecutionInput {
  dryRunId: string;
  executionId: string;
}

/** What one replayed execution runs: the dry run's nodes over the recorded execution's input, and its recorded replies. */
export interface DryRunExecutionPlan {
  input: ExecutionWorkflowInput;
  replies: CustomerReply[];
}
