/**
 * Owns the workflow bundle's entry point: every workflow the worker registers is
 * re-exported here, and only deterministic workflow code may be reachable from it.
 */
export * from './connectivity.workflow';
export * from './execution.workflow';
export * from './scheduled-trigger.workflow';
export * from './webhook-delivery.workflow';
export * from './export.workflow';
export * from './replay.workflow';
