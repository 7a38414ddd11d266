/**
 * Owns the trigger activities: `fireScheduledTrigger` records one firing of a schedule
 * trigger and starts its workflow execution through `fireTrigger`. Idempotent per
 * scheduled run (the run's workflow id is the dedupe key). A trigger that can no longer
 * fire (deleted, paused, inactive) is skipped, and a refused start is recorded as a failed
 * trigger execution; neither is retried. Anything else is retried under temporal/failures.ts:
 * our database's outage is waited out, other errors get FIRING_BUDGET attempts.
 */
import { infraRetryMsOf } from '../../src/config';
import { DomainError } from '../../src/errors';
import { endpointsFromConfig } from '../../src/failures';
import { fireTrigger } from '../../src/modules/triggers/trigger-firing';
import { Trigger } from '../../src/modules/triggers/trigger.entity';
import type { Services } from '../../src/services';
import { dependencyWaitsFor, type ProviderBudget, runWithFailurePolicy } from '../failures';
import { TRIGGER_FIRING_FAILED } from '../failure-types';
import { type FireScheduledTriggerInput, type FireScheduledTriggerResult } from '../triggers.shared';

const FIRING_BUDGET: ProviderBudget = { maximumAttempts: 20, initialIntervalMs: 1_000, maximumIntervalMs: 30_000, finalType: TRIGGER_FIRING_FAILED };

export function createTriggerActivities(deps: { services: Services }) {
  const { services } = deps;
  const policy = {
    waits: dependencyWaitsFor(services.metrics.registry),
    endpoints: endpointsFromConfig(services.config),
    infraRetryMs: infraRetryMsOf(services.config),
  };
  return {
    fireScheduledTrigger: (input: FireScheduledTriggerInput) => runWithFailurePolicy(policy, FIRING_BUDGET, () => fire(input)),
  };

  async function fire(input: FireScheduledTriggerInput): Promise<FireScheduledTriggerResult> {
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
      // Without an execution, the workflow's concurrency rule skipped it: the firing records why.
      if (fired.executionId === null) return { outcome: 'skipped', triggerExecutionId: fired.triggerExecutionId, reason: 'concurrency rule: an execution for the customer is running' };
      return { outcome: 'started', triggerExecutionId: fired.triggerExecutionId, executionId: fired.executionId };
    } catch (err) {
      // A refusal of the domain (not active, not found) will not change on retry.
      if (err instanceof DomainError) {
        return { outcome: err.code === 'TRIGGER_NOT_ACTIVE' || err.code === 'TRIGGER_NOT_FOUND' ? 'skipped' : 'failed', reason: err.message };
      }
      throw err;
    }
  }
}

export type TriggerActivities = ReturnType<typeof createTriggerActivities>;
