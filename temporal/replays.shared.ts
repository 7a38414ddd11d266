/**
 * Owns the Temporal names of bulk replays: the workflow type and id, and the I/O shared by
 * the API (which starts it), the workflow and its activities. Imported by workflow code:
 * nothing but plain types.
 */
export const REPLAY_WORKFLOW_TYPE = 'replayWorkflow';

/** One workflow per replay; the replay id is new, so a second start of it is a bug. */
export const replayWorkflowId = (replayId: string) => `replay:${replayId}`;

/** Keyset position in the replay's (started_at, id) order; started_at as PostgreSQL text (µs). */
export interface ReplayCursor {
  startedAt: string;
  id: string;
}

export interface ReplayWorkflowInput {
  replayId: string;
  organizationId: string;
  ratePerSecond: number;
  /** Batches per run before continue-as-new (REPLAY_BATCHES_PER_RUN at creation). */
  batchesPerRun: number;
  /** Where the previous run stopped; absent on the first run. */
  cursor?: ReplayCursor | null;
}

export interface ReplayBatchInput {
  replayId: string;
  organizationId: string;
  cursor: ReplayCursor | null;
  limit: number;
}

export interface ReplayBatchResult {
  /** The last execution of this batch (the next batch starts after it). */
  cursor: ReplayCursor | null;
  processed: number;
  /** No execution left, or the replay is no longer running (cancelled). */
  done: boolean;
}
