/**
 * Owns the Temporal worker's lifecycle: connect, build (or reuse) the workflow bundle,
 * create a `Worker` on our task queue, run it, and drain it on shutdown. The process
 * entry point (src/main.ts `worker`) and the test helpers both go through here, so tests
 * exercise the same worker the service runs.
 */
import { bundleWorkflowCode, DefaultLogger, type LogLevel, makeTelemetryFilterString, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Logger, TunerHolder, WorkflowBundlePath, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Duration } from '@temporalio/common';
import type { Logger as PinoLogger } from 'pino';
import { workerTracingOptions, workflowTracingModules } from '../src/telemetry/temporal';

/** Bundled code in memory (`bundleWorkflows()`), or the path of a file holding it (TEMPORAL_WORKFLOW_BUNDLE_PATH). */
export type WorkflowBundle = WorkflowBundleWithSourceMap | WorkflowBundlePath;

export interface CreateWorkerOptions {
  address: string;
  namespace: string;
  taskQueue: string;
  /** The object `createActivities(deps)` returns. */
  activities: object;
  /**
   * A bundle from `bundleWorkflows()`, or `{ codePath }` of one written to a file. Without
   * it `Worker.create` runs webpack itself, which takes seconds; the tests build one bundle
   * per run and pass its path (TEMPORAL_WORKFLOW_BUNDLE_PATH) to every worker instead.
   */
  workflowBundle?: WorkflowBundle;
  /** Reuse a connection (the caller then owns closing it); otherwise one is opened here. */
  connection?: NativeConnection;
  /** How long in-flight activities may keep running after shutdown starts. */
  shutdownGraceTime?: Duration;
  /** The SDK's sticky-queue schedule-to-start timeout (default 10 s); tests lower it (TEMPORAL_STICKY_QUEUE_TIMEOUT_MS). */
  stickyQueueScheduleToStartTimeout?: Duration;
  /**
   * Task slots (WORKER_ACTIVITY_SLOTS, WORKER_WORKFLOW_TASK_SLOTS, WORKER_EAGER_ACTIVITY_SLOTS,
   * WORKER_TARGET_CPU): see `workerTuner`.
   */
  slots?: WorkerSlots;
}

export interface WorkerSlots {
  activities?: number | undefined;
  /** A fixed count of workflow-task slots (the SDK's 40 when neither this nor `targetCpu` is set). */
  workflowTasks?: number | undefined;
  eagerActivities?: number | undefined;
  /** Instead of a fixed count: the machine's CPU use (0–1) above which no workflow-task slot is added. */
  targetCpu?: number | undefined;
}

/** Workflow-task slots issued whatever the CPU: with 4, another organization's new runs waited up to 4.9 s for a task slot behind a flood. */
export const MINIMUM_WORKFLOW_TASK_SLOTS = 8;
/** The SDK's fixed defaults. */
const DEFAULT_WORKFLOW_TASK_SLOTS = 40;
const DEFAULT_ACTIVITY_SLOTS = 100;

/**
 * The SDK's fixed slots, or with `targetCpu` workflow-task slots that follow the machine's
 * CPU (Temporal's resource-based slot supplier: a controller on the CPU and memory in use).
 * Why offer it: a worker holding 40 tasks on a saturated machine runs each of them slower, as
 * they take turns on one event loop, and a task that Temporal's priority put first still
 * waits behind the other 39; with the CPU below the target, slots are added as tasks come,
 * so a worker whose tasks wait on I/O (a slow provider's send, a local activity that holds
 * its task's slot) is not capped by a count. Why not the default: on 2 cores it cut another
 * organization's p99 behind a flood from 11.3x to 7.8x idle, but a saturated closed loop of
 * one organization ran about 8 % slower (docs/performance.md, section `fairness`).
 */
export function workerTuner(slots: WorkerSlots = {}): TunerHolder {
  const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });
  return {
    workflowTaskSlotSupplier:
      slots.targetCpu === undefined || slots.workflowTasks !== undefined
        ? fixed(slots.workflowTasks ?? DEFAULT_WORKFLOW_TASK_SLOTS)
        : {
            type: 'resource-based',
            tunerOptions: { targetCpuUsage: slots.targetCpu, targetMemoryUsage: 0.9 },
            minimumSlots: MINIMUM_WORKFLOW_TASK_SLOTS,
            maximumSlots: 1000,
          },
    activityTaskSlotSupplier: fixed(slots.activities ?? DEFAULT_ACTIVITY_SLOTS),
    localActivityTaskSlotSupplier: fixed(DEFAULT_ACTIVITY_SLOTS),
    nexusTaskSlotSupplier: fixed(DEFAULT_ACTIVITY_SLOTS),
  };
}

export interface CreatedWorker {
  worker: Worker;
  /** The connection the worker polls on. */
  connection: NativeConnection;
  /** Whether `runWorker`'s shutdown should close `connection` (true when opened here). */
  ownsConnection: boolean;
}

const TEMPORAL_LEVELS: Record<string, LogLevel> = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO', warn: 'WARN' };

/**
 * Installs the SDK's Runtime with a logger that writes through pino, so the worker's own
 * messages, the webpack bundling output and the native core's logs (forwarded, WARN and
 * above) come out as the same JSON lines as ours instead of the SDK's pretty console
 * format. With `metricsBindAddress` (host:port), the Core SDK's own worker metrics (task
 * slots, poll and schedule-to-start latencies, sticky cache) are served there in the
 * Prometheus text format; the process's /metrics appends them (src/main.ts). Call once per
 * process, before any worker or NativeConnection exists.
 */
export function installTemporalRuntime(logger: PinoLogger, opts: { metricsBindAddress?: string } = {}): void {
  const sdk = logger.child({ component: 'temporal-sdk' });
  const log = (entry: { level: LogLevel; message: string; meta?: Record<string, unknown> }) => {
    const method = entry.level.toLowerCase() as 'trace' | 'debug' | 'info' | 'warn' | 'error';
    sdk[method](entry.meta ?? {}, entry.message);
  };
  Runtime.install({
    logger: new DefaultLogger(TEMPORAL_LEVELS[logger.level] ?? 'ERROR', log),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
      // Core's defaults: names as Temporal's own dashboards know them (temporal_ prefix,
      // latencies in milliseconds, counters without a _total suffix).
      ...(opts.metricsBindAddress ? { metrics: { prometheus: { bindAddress: opts.metricsBindAddress } } } : {}),
    },
  });
}

/** Path of the workflow bundle's entry point (temporal/workflows/index). */
export const workflowsPath: string = require.resolve('./workflows');

/**
 * Bundles the workflow code with webpack. Costly (seconds), so call it once per process
 * or once per test file and hand the result to every `createWorker` call.
 */
export async function bundleWorkflows(opts: { logger?: Logger } = {}): Promise<WorkflowBundleWithSourceMap> {
  // With tracing on, the bundle carries Temporal's OpenTelemetry workflow interceptors.
  return await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: workflowTracingModules(), ...(opts.logger ? { logger: opts.logger } : {}) });
}

export async function createWorker(opts: CreateWorkerOptions): Promise<CreatedWorker> {
  const ownsConnection = opts.connection === undefined;
  const connection = opts.connection ?? (await NativeConnection.connect({ address: opts.address }));
  try {
    const worker = await Worker.create({
      connection,
      namespace: opts.namespace,
      taskQueue: opts.taskQueue,
      activities: opts.activities,
      ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath }),
      shutdownGraceTime: opts.shutdownGraceTime ?? '30 seconds',
      ...(opts.stickyQueueScheduleToStartTimeout !== undefined ? { stickyQueueScheduleToStartTimeout: opts.stickyQueueScheduleToStartTimeout } : {}),
      // Polls scale with the server's feedback (1–100, from 5). The fixed default was 10
      // workflow-task polls of which only 2 served the normal queue, where every workflow's
      // first task arrives: a burst of webhook deliveries (one task each) queued in the
      // server's backlog behind those 2 (docs/performance.md, "Poller autoscaling").
      workflowTaskPollerBehavior: { type: 'autoscaling' },
      activityTaskPollerBehavior: { type: 'autoscaling' },
      tuner: workerTuner(opts.slots),
      ...(opts.slots?.eagerActivities !== undefined ? { maxEagerActivityReservationsPerWorkflowTask: opts.slots.eagerActivities } : {}),
      // Temporal's OpenTelemetry interceptors and workflow span sink, when tracing is on.
      ...workerTracingOptions(),
    });
    return { worker, connection, ownsConnection };
  } catch (err) {
    if (ownsConnection) await connection.close();
    throw err;
  }
}

export interface RunningWorker {
  worker: Worker;
  /** Settles when the worker stops: resolves after a drain, rejects on a fatal worker error. */
  done: Promise<void>;
  /**
   * Stops polling, waits for in-flight tasks to finish (up to the grace time) and closes
   * the connection if this module opened it. Safe to call more than once, and after the
   * Runtime's own SIGTERM/SIGINT handler already started the shutdown.
   */
  shutdown(): Promise<void>;
}

export function runWorker(created: CreatedWorker): RunningWorker {
  const { worker, connection, ownsConnection } = created;
  const done = worker.run();
  // `done` is awaited by shutdown(); keep an early fatal error from becoming unhandled.
  done.catch(() => undefined);
  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      try {
        await done;
      } finally {
        if (ownsConnection) await connection.close();
      }
    })();
    return stopping;
  };
  return { worker, done, shutdown };
}
