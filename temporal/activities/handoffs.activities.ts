/** Owns the handoff timer's activity: ending a handoff whose `until` passed (src/modules/handoffs/handoff.service.ts). */
import type { Services } from '../../src/services';
import { expireHandoff } from '../../src/modules/handoffs/handoff.service';
import type { HandoffExpiryInput } from '../handoffs.shared';

export function createHandoffActivities(deps: { services: Services }) {
  return {
    async expireHandoff(input: HandoffExpiryInput): Promise<boolean> {
      return await expireHandoff(deps.services, input);
    },
  };
}

export type HandoffActivities = ReturnType<typeof createHandoffActivities>;
