/**
 * The worker's task slots (temporal/worker.ts `workerTuner`) as the settings choose them:
 * the SDK's fixed counts by default, a fixed count of workflow-task slots, or with
 * WORKER_TARGET_CPU slots that follow the machine's CPU; the settings are checked at start.
 * (A worker built with the default tuner runs every workflow of the suite.)
 */
import { ConfigError, loadConfig } from '../../src/config';
import { MINIMUM_WORKFLOW_TASK_SLOTS, workerTuner } from '../../temporal/worker';

const tunerOf = (env: Record<string, string>) => {
  const c = loadConfig(env);
  return workerTuner({ activities: c.WORKER_ACTIVITY_SLOTS, workflowTasks: c.WORKER_WORKFLOW_TASK_SLOTS, targetCpu: c.WORKER_TARGET_CPU });
};

it("keeps the SDK's fixed slots by default: 40 workflow tasks, 100 activities", () => {
  expect(tunerOf({})).toMatchObject({
    workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: 40 },
    activityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
    localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: 100 },
  });
});

it("with WORKER_TARGET_CPU, gives workflow tasks slots that follow the CPU (Temporal's resource-based supplier, at least 8)", () => {
  expect(tunerOf({ WORKER_TARGET_CPU: '0.8' }).workflowTaskSlotSupplier).toEqual({
    type: 'resource-based',
    tunerOptions: { targetCpuUsage: 0.8, targetMemoryUsage: 0.9 },
    minimumSlots: MINIMUM_WORKFLOW_TASK_SLOTS,
    maximumSlots: 1000,
  });
  expect(MINIMUM_WORKFLOW_TASK_SLOTS).toBe(8);
});

it('takes WORKER_WORKFLOW_TASK_SLOTS and WORKER_ACTIVITY_SLOTS as fixed counts', () => {
  const tuner = tunerOf({ WORKER_WORKFLOW_TASK_SLOTS: '10', WORKER_ACTIVITY_SLOTS: '20' });
  expect(tuner.workflowTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 10 });
  expect(tuner.activityTaskSlotSupplier).toEqual({ type: 'fixed-size', numSlots: 20 });
});

it.each(['0', '1.5', '-0.2', 'most'])('refuses WORKER_TARGET_CPU=%s at start, naming the variable', (value) => {
  expect(() => loadConfig({ WORKER_TARGET_CPU: value })).toThrow(ConfigError);
  expect(() => loadConfig({ WORKER_TARGET_CPU: value })).toThrow(/WORKER_TARGET_CPU/);
});

it('refuses WORKER_TARGET_CPU with WORKER_WORKFLOW_TASK_SLOTS: one or the other', () => {
  expect(() => loadConfig({ WORKER_TARGET_CPU: '0.8', WORKER_WORKFLOW_TASK_SLOTS: '40' })).toThrow(/WORKER_TARGET_CPU: set it or WORKER_WORKFLOW_TASK_SLOTS/);
});
