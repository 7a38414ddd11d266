/**
 * Owns the Temporal names of debounced bursts (docs/executions.md, "Debounced bursts"): the
 * debouncer workflow that closes one burst when it is due. One run per burst row
 * (`bst_…`). Imported by workflow code: types and strings only.
 */
export const DEBOUNCE_BURST_WORKFLOW_TYPE = 'debounceBurstWorkflow';

export const debounceBurstWorkflowId = (burstId: string) => `debounce:${burstId}`;

export interface DebounceBurstInput {
  organizationId: string;
  burstId: string;
}

/**
 * One look at the burst: `closed` (by this look or an earlier one; `executionId` when it
 * started or queued an execution), or still open for `waitMs` more.
 */
export type BurstCheck = { closed: true; executionId: string | null } | { closed: false; waitMs: number };
