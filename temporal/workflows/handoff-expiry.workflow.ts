/**
 * Owns `handoffExpiryWorkflow`: a durable timer to a handoff's `until` (a Temporal timer, no
 * polling), then one activity that ends the handoff if it is still the one this run was started
 * for (not ended by DELETE, `until` not moved). DELETE cancels the run; a lost cancel is harmless.
 */
import { proxyActivities, sleep } from '@temporalio/workflow';
import type { HandoffActivities } from '../activities/handoffs.activities';
import type { HandoffExpiryInput } from '../handoffs.shared';

const acts = proxyActivities<HandoffActivities>({
  startToCloseTimeout: '30 seconds',
  // Our own database being away is waited out: the handoff must end.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function handoffExpiryWorkflow(input: HandoffExpiryInput): Promise<{ ended: boolean }> {
  const wait = input.untilMs - Date.now();
  if (wait > 0) await sleep(wait);
  return { ended: await acts.expireHandoff({ organizationId: input.organizationId, handoffId: input.handoffId, untilMs: input.untilMs }) };
}
