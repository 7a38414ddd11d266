/** Owns the debouncer's activity: one look at a burst (src/modules/debounce/burst-closer.ts). */
import type { Services } from '../../src/services';
import { closeBurstIfDue } from '../../src/modules/debounce/burst-closer';
import type { BurstCheck, DebounceBurstInput } from '../debounce.shared';

export function createDebounceActivities(deps: { services: Services }) {
  return {
    async closeBurstIfDue(input: DebounceBurstInput): Promise<BurstCheck> {
      return await closeBurstIfDue(deps.services, input);
    },
  };
}

export type DebounceActivities = ReturnType<typeof createDebounceActivities>;
