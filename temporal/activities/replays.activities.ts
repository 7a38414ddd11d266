/** Owns the replay workflow's activities: thin wrappers over src/modules/replays/replay.runner.ts. */
import { Context } from '@temporalio/activity';
import type { Services } from '../../src/services';
import { finishReplay, runReplayBatch } from '../../src/modules/replays/replay.runner';
import type { ReplayBatchInput, ReplayBatchResult } from '../replays.shared';

export function createReplayActivities(deps: { services: Services }) {
  return {
    async replayBatch(input: ReplayBatchInput): Promise<ReplayBatchResult> {
      return await runReplayBatch(deps.services, input, () => Context.current().heartbeat());
    },
    async finishReplay(replayId: string): Promise<boolean> {
      return await finishReplay(deps.services, replayId);
    },
  };
}

export type ReplayActivities = ReturnType<typeof createReplayActivities>;
