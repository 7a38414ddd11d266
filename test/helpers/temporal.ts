/**
 * Owns test access to the run's shared Temporal dev server (started by global-setup.ts):
 * its address, clients, task queue names unique per run, and real workers built from the
 * same `createWorker` the service uses, loading the workflow bundle global-setup.ts built
 * once for the run.
 */
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { bundleWorkflows, createWorker, runWorker } from '../../temporal/worker';
import type { RunningWorker, WorkflowBundle } from '../../temporal/worker';
import { createTemporalClient } from '../../src/temporal-client';
import type { TemporalClient } from '../../src/temporal-client';
import { TEST_STICKY_QUEUE_TIMEOUT_MS } from './process';

export const TEST_NAMESPACE = 'default';

export function testRunId(): string {
  const id = process.env.TEST_RUN_ID;
  if (!id) throw new Error('TEST_RUN_ID is not set: run the tests through jest (global-setup.ts sets it)');
  return id;
}

export function temporalAddress(): string {
  const address = process.env.TEST_TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEST_TEMPORAL_ADDRESS is not set: run the tests through jest (global-setup.ts sets it)');
  return address;
}

/** A task queue no other test, file or earlier run polls, so workers never steal tasks. */
export function uniqueTaskQueue(name: string): string {
  return `${name}-${testRunId()}-${randomBytes(4).toString('hex')}`;
}

export async function connectTestClient(): Promise<TemporalClient> {
  return await createTemporalClient({ address: temporalAddress(), namespace: TEST_NAMESPACE });
}

// The SDK's default INFO loggers print webpack stats and every worker state change into
// the jest output; warnings and errors are what a failing test needs.
const quietLogger = new DefaultLogger('WARN');

let runtimeInstalled = false;
export function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: quietLogger });
  } catch {
    // Already instantiated by something earlier in this file: keep its logger.
  }
}

// global-setup.ts bundles once per run and passes the file's path. Without it (a file run
// outside jest's global setup) webpack runs once per test file: jest gives every test file
// its own module registry, so this memo is per file.
let bundle: Promise<WorkflowBundle> | undefined;
export function workflowBundle(): Promise<WorkflowBundle> {
  const codePath = process.env.TEMPORAL_WORKFLOW_BUNDLE_PATH;
  bundle ??= codePath ? Promise.resolve({ codePath }) : bundleWorkflows({ logger: quietLogger });
  return bundle;
}

export interface TestWorker {
  worker: RunningWorker['worker'];
  /** Settles when the worker stops (see RunningWorker.done). */
  done: Promise<void>;
  /** Graceful shutdown: drains in-flight tasks, then closes the connection. */
  stop(): Promise<void>;
}

export async function startTestWorker(opts: { taskQueue: string; activities: object }): Promise<TestWorker> {
  installQuietRuntime();
  const created = await createWorker({
    address: temporalAddress(),
    namespace: TEST_NAMESPACE,
    taskQueue: opts.taskQueue,
    activities: opts.activities,
    workflowBundle: await workflowBundle(),
    stickyQueueScheduleToStartTimeout: TEST_STICKY_QUEUE_TIMEOUT_MS,
  });
  const running = runWorker(created);
  return { worker: running.worker, done: running.done, stop: running.shutdown };
}
