/**
 * Owns the Temporal Schedule of each schedule trigger (id `trigger-schedule:<trigger id>`):
 * built from the trigger's cron, timezone and start/end dates, paused whenever the trigger
 * is not active, and deleted with it. `syncTriggerSchedule` is idempotent (create or
 * update to match the trigger), so callers run it inside the database transaction that
 * changed the trigger and a failure rolls that change back.
 *
 * PostgreSQL stays the source of truth: a tick that reaches a trigger which can no longer
 * fire is skipped by the activity, so a schedule left behind by a crash does no harm.
 *
 * These calls answer the request (nothing finishes them later), so they are bounded by
 * SCHEDULE_CALL_TIMEOUT_MS and refused at once while the process knows Temporal is down:
 * 503 SCHEDULER_UNAVAILABLE rather than a request held for the client's own retries.
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type ScheduleOptions, type Workflow } from '@temporalio/client';
import { DomainError, unavailable, unprocessable } from '../../errors';
import type { Services } from '../../services';
import { scheduledTriggerMetadata } from '../../temporal-metadata';
import { SearchAttributeKeys } from '../../../temporal/shared';
import {
  SCHEDULED_TRIGGER_WORKFLOW_TYPE,
  scheduledTriggerWorkflowId,
  triggerScheduleId,
  type ScheduledTriggerInput,
} from '../../../temporal/triggers.shared';
import { isInfrastructureError } from '../../failures';
import { isTemporalReachable } from '../../temporal-client';
import type { Trigger } from './trigger.entity';
import type { ScheduleTriggerConfig } from './trigger.schemas';

export interface ScheduleTarget {
  trigger: Pick<Trigger, 'id' | 'organizationId' | 'workflowId' | 'name' | 'status' | 'channel' | 'configuration'>;
  workflowName: string;
}

function scheduleOptions(services: Services, { trigger, workflowName }: ScheduleTarget): ScheduleOptions {
  const config = trigger.configuration as unknown as ScheduleTriggerConfig;
  const args: [ScheduledTriggerInput] = [{ organizationId: trigger.organizationId, triggerId: trigger.id }];
  const typedSearchAttributes = [
    { key: SearchAttributeKeys.organizationId, value: trigger.organizationId },
    { key: SearchAttributeKeys.workflowId, value: trigger.workflowId },
    { key: SearchAttributeKeys.triggerId, value: trigger.id },
    { key: SearchAttributeKeys.channel, value: trigger.channel },
  ];
  return {
    scheduleId: triggerScheduleId(trigger.id),
    spec: {
      cronExpressions: [config.cron_expression],
      timezone: config.timezone,
      ...(config.start_date ? { startAt: new Date(config.start_date) } : {}),
      ...(config.end_date ? { endAt: new Date(config.end_date) } : {}),
    },
    action: {
      type: 'startWorkflow',
      workflowType: SCHEDULED_TRIGGER_WORKFLOW_TYPE,
      workflowId: scheduledTriggerWorkflowId(trigger.id),
      taskQueue: services.config.TEMPORAL_TASK_QUEUE,
      args,
      typedSearchAttributes,
      memo: { trigger_name: trigger.name, workflow_name: workflowName },
      workflowExecutionTimeout: '15 minutes',
      ...scheduledTriggerMetadata(services.config, {
        triggerId: trigger.id,
        triggerName: trigger.name,
        workflowId: trigger.workflowId,
        workflowName,
        organizationId: trigger.organizationId,
        channel: trigger.channel,
      }),
    },
    // A tick that finds the previous one still running is skipped, not queued; a missed
    // tick (server or worker down) is caught up within a minute, never hours later.
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute', pauseOnFailure: false },
    memo: { trigger_name: trigger.name, workflow_name: workflowName },
    typedSearchAttributes,
    state: { paused: trigger.status !== 'active', note: `trigger ${trigger.status}` },
  };
}

/**
 * Longest a request waits on its schedule calls (an update is a describe and an update).
 * Longer than TEMPORAL_CALL_TIMEOUT_MS: a start can be left to the reconciler, this cannot.
 */
const SCHEDULE_CALL_TIMEOUT_MS = 5_000;
/** gRPC status of a call that outlived its deadline. */
const DEADLINE_EXCEEDED = 4;

/** Runs the schedule calls of one request within SCHEDULE_CALL_TIMEOUT_MS; refused at once while Temporal is known down. */
async function scheduleCalls(services: Services, triggerId: string, calls: () => Promise<void>): Promise<void> {
  if (services.dependencies.isDown('temporal')) throw schedulerUnavailable();
  try {
    await services.temporal.connection.withDeadline(Date.now() + SCHEDULE_CALL_TIMEOUT_MS, calls);
  } catch (err) {
    // Down: the monitor probes Temporal and says when it is back; until then requests are
    // refused at once. Slow is not down (a loaded server answers late): a probe decides.
    if (isInfrastructureError(err, services.endpoints)) {
      if ((err as { code?: unknown }).code !== DEADLINE_EXCEEDED) services.dependencies.reportDown('temporal', err);
      else
        void isTemporalReachable(services.temporal.connection).then((up) => {
          if (!up) services.dependencies.reportDown('temporal', err);
        });
    }
    throw asScheduleError(services, err, triggerId);
  }
}

/** Creates or updates the trigger's schedule so it matches the trigger (paused unless active). */
export async function syncTriggerSchedule(services: Services, target: ScheduleTarget): Promise<void> {
  const options = scheduleOptions(services, target);
  const client = services.temporal.client.schedule;
  await scheduleCalls(services, target.trigger.id, async () => {
    try {
      // `<Workflow>` given, not inferred: inferring it from the options took the whole
      // type-check ~3 s (tsc --generateTrace), twice the next slowest file.
      await client.getHandle(options.scheduleId).update<Workflow>(() => ({
        spec: options.spec,
        action: options.action,
        policies: options.policies,
        typedSearchAttributes: options.typedSearchAttributes,
        state: { paused: options.state?.paused ?? false, note: options.state?.note },
      }));
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
      await client.create<Workflow>(options).catch((createErr: unknown) => {
        // Created concurrently since the update failed: it was built from the same trigger.
        if (!(createErr instanceof ScheduleAlreadyRunning)) throw createErr;
      });
    }
  });
}

export async function deleteTriggerSchedule(services: Services, triggerId: string): Promise<void> {
  await scheduleCalls(services, triggerId, async () => {
    try {
      await services.temporal.client.schedule.getHandle(triggerScheduleId(triggerId)).delete();
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    }
  });
}

const schedulerUnavailable = () => unavailable('SCHEDULER_UNAVAILABLE', 'The scheduler is unavailable; the trigger was not changed. Retry shortly.', 5);

/** Temporal refusing the spec is the client's cron; anything else means Temporal is unavailable. */
function asScheduleError(services: Services, err: unknown, triggerId: string): Error {
  if (err instanceof DomainError) return err;
  const message = (err as Error)?.message ?? String(err);
  if (/invalid.*(cron|spec|time ?zone)|cron|unknown time zone/i.test(message) && (err as { code?: number }).code === 3) {
    return unprocessable('INVALID_CRON_EXPRESSION', `The scheduler rejected the schedule: ${message}`, 'configuration.cron_expression');
  }
  services.logger.error({ err, trigger_id: triggerId }, 'could not sync the trigger schedule with Temporal');
  return schedulerUnavailable();
}
