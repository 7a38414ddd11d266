/**
 * Owns the Temporal names of schedule triggers: the schedule id derived from a trigger id,
 * the id of each scheduled run, the workflow type the schedule starts and its I/O types.
 * Imported by workflow code, so it imports nothing but types.
 */

/** One Temporal Schedule per schedule trigger. */
export const triggerScheduleId = (triggerId: string) => `trigger-schedule:${triggerId}`;

/** Base id of a scheduled run; Temporal appends the scheduled time, making each run unique. */
export const scheduledTriggerWorkflowId = (triggerId: string) => `trigger-fire:${triggerId}`;

export const SCHEDULED_TRIGGER_WORKFLOW_TYPE = 'scheduledTriggerWorkflow';


export interface ScheduledTriggerInput {
  organizationId: string;
  triggerId: string;
}

export interface FireScheduledTriggerInput extends ScheduledTriggerInput {
  /** The scheduled run's workflow id: the dedupe key of this firing. */
  runKey: string;
  /** When the schedule fired (the workflow's start time). */
  firedAt: string;
}

export interface FireScheduledTriggerResult {
  /** `started` with both ids; `skipped` when the trigger can no longer fire; `failed` when no execution could start. */
  outcome: 'started' | 'skipped' | 'failed';
  triggerExecutionId?: string;
  executionId?: string;
  reason?: string;
}
