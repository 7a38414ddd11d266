/**
 * Owns the dry runs' activities: the parent's (begin, plan one execution, finish, fail),
 * thin wrappers over src/modules/dry-runs/dry-run.runner.ts, and the execution activities
 * built with a dry run's sink, registered under DRY_RUN_ACTIVITY_PREFIX names. They are the
 * same code as the live execution activities; only the sink differs (execution-sink.ts).
 */
import type { Services } from '../../src/services';
import { dryRunExecutionSink } from '../../src/modules/dry-runs/dry-run.sink';
import { beginDryRun, failDryRun, finishDryRun, planDryRunExecution } from '../../src/modules/dry-runs/dry-run.runner';
import type { DryRunExecutionInput, DryRunExecutionPlan } from '../dry-runs.shared';
import { DRY_RUN_ACTIVITY_PREFIX } from '../executions.shared';
import { createExecutionActivities } from './executions.activities';

type Prefixed<A> = { [K in keyof A as `${typeof DRY_RUN_ACTIVITY_PREFIX}${K & string}`]: A[K] };

function prefixed<A extends object>(activities: A): Prefixed<A> {
  return Object.fromEntries(Object.entries(activities).map(([name, fn]) => [`${DRY_RUN_ACTIVITY_PREFIX}${name}`, fn])) as Prefixed<A>;
}

export function createDryRunActivities(deps: { services: Services }) {
  const { services } = deps;
  return {
    ...prefixed(createExecutionActivities({ services, sink: dryRunExecutionSink(services) })),
    async beginDryRun(dryRunId: string): Promise<string[]> {
      return await beginDryRun(services, dryRunId);
    },
    async planDryRunExecution(input: DryRunExecutionInput): Promise<DryRunExecutionPlan> {
      return await planDryRunExecution(services, input.dryRunId, input.executionId);
    },
    async finishDryRun(dryRunId: string): Promise<void> {
      await finishDryRun(services, dryRunId);
    },
    async failDryRun(dryRunId: string, message: string): Promise<void> {
      await failDryRun(services, dryRunId, message);
    },
  };
}

export type DryRunActivities = ReturnType<typeof createDryRunActivities>;
