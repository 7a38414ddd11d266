/**
 * Owns the trigger activities: `fireScheduledTrigger` records one firing of a schedule
 * trigger and starts its workflow execution through `fireTrigger`. Idempotent per
 * scheduled run (the run's workflow id is the dedupe key). A trigger that can no longer
 * fire (deleted, paused, inactive) is skipped, and a refused start is recorded as a failed
 * trigger execution; neither is retried. Anything else (database, Temporal) is retried.
 */
import { AppError } from '../../src/http/errors';
import { fireTrigger } from '../../src/modules/triggers/trigger-firing';
import { Trigger } from '../../src/modules/triggers/trigger.entity';
import type { Services } from '../../src/services';
import type { FireScheduledTriggerInput, FireScheduledTriggerResult } from '../triggers.shared';

export function createTriggerActivities(deps: { services: Services }) {
  const { services } = deps;
  return {
    async fireScheduledTrigger(input: FireScheduledTriggerInput): Promise<FireScheduledTriggerResult> {
      const em = services.orm.em.fork();
      const trigger = await em.findOne(Trigger, { id: input.triggerId, organizationId: input.organizationId, deletedAt: null });
      if (!trigger || trigger.type !== 'schedule') return { outcome: 'skipped', reason: 'trigger not found' };
      if (trigger.status !== 'active') return { outcome: 'skipped', reason: `trigger is ${trigger.status}` };
      try {
        const fired = await fireTrigger(services, {
          organizationId: trigger.organizationId,
          triggerId: trigger.id,
          workflowId: trigger.workflowId,
          channel: trigger.channel,
          input: { scheduled_at: input.firedAt, channel: trigger.channel },
          metadata: { source: 'schedule', user_agent: null, schedule_run_id: input.runKey },
          sourceKey: input.runKey,
        });
        return { outcome: 'started', ...fired };
      } catch (err) {
        // A client-side refusal (not active, not found) will not change on retry.
        if (err instanceof AppError && err.status < 500) {
          return { outcome: err.code === 'TRIGGER_NOT_ACTIVE' || err.code === 'TRIGGER_NOT_FOUND' ? 'skipped' : 'failed', reason: err.message };
        }
        throw err;
      }
    },
  };
}

export type TriggerActivities = ReturnType<typeof createTriggerActivities>;
