/**
 * Owns the Temporal names of human handoffs (docs/handoff.md): the timer workflow that ends a
 * handoff when its `until` passes. One run per (handoff, until): a POST that moves `until`
 * starts another, and a run whose handoff ended or moved finds nothing to end.
 * Imported by workflow code: types and strings only.
 */

export const HANDOFF_EXPIRY_WORKFLOW_TYPE = 'handoffExpiryWorkflow';

export const handoffExpiryWorkflowId = (handoffId: string, untilMs: number) => `handoff:${handoffId}:${untilMs}`;

export interface HandoffExpiryInput {
  organizationId: string;
  handoffId: string;
  /** When the handoff ends (epoch ms). */
  untilMs: number;
}
