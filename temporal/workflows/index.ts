/**
 * Owns the workflow bundle's entry point: every workflow the worker registers is
 * re-exported here, and only deterministic workflow code may be reachable from it.
 */
export * from './connectivity.workflow';
// Not `export *`: runExecution is the walk shared with dry runs, not a workflow type.
export { executionWorkflow } from './execution.workflow';
export * from './scheduled-trigger.workflow';
export * from './webhook-delivery.workflow';
export * from './webhook-recovery.workflow';
export * from './export.workflow';
export * from './report.workflow';
export * from './file-expiry.workflow';
export * from './replay.workflow';
export * from './dry-run.workflow';
export * from './agent-message.workflow';
export * from './handoff-expiry.workflow';
export * from './debounce-burst.workflow';
