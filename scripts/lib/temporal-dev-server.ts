/**
 * Owns running a Temporal dev server (`temporal server start-dev`) as a child process on
 * given ports with a SQLite file. It gets our custom search attributes as flags; any other
 * server through `ensureSearchAttributes` (src/temporal-search-attributes.ts).
 */
import { spawn } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { searchAttributeCliArgs } from '../../temporal/shared';

export interface DevServerOptions {
  /** Path of the `temporal` CLI (see findOrInstallTemporalCli). */
  executable: string;
  /** SQLite file; executions survive restarts that reuse it. */
  dbFile: string;
  port: number;
  /** Web UI port; omitted = no UI (`--headless`). */
  uiPort?: number;
  namespace: string;
  ip?: string;
  /** Task-queue fairness (FAIRNESS_ARGS); default on. Off only to measure what it changes. */
  fairness?: boolean;
  /** How long to wait for the server to answer; default 60 s. */
  startTimeoutMs?: number;
  log?: (msg: string) => void;
}

export interface DevServer {
  /** host:port of the gRPC frontend. */
  address: string;
  /** SIGTERM, then SIGKILL if it has not exited after `timeoutMs` (default 10 s). */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL at once, as a crash would (the outage drill, `npm run chaos`). */
  kill(): Promise<void>;
}

/** The server process died before serving (as opposed to never answering). */
class ExitedDuringStartError extends Error {}

/**
 * One partition per task queue (the server's default is 4). With a local worker's few
 * polls, a task written to a partition that no poll was waiting on sat in that partition's
 * backlog for about 2 s: the benchmarks' rounds ran at half speed when it struck, on
 * whichever side (docs/performance.md, "Task queue partitions"). The test suite's server
 * takes the same arguments.
 */
export const ONE_PARTITION_ARGS = [
  '--dynamic-config-value', 'matching.numTaskqueueReadPartitions=1',
  '--dynamic-config-value', 'matching.numTaskqueueWritePartitions=1',
];

/**
 * How often the one history shard of a dev server may read each of its task queues. A
 * workflow task, an activity task, a timer and a visibility record each reach their queue
 * as a task that the shard's reader loads from SQLite; the server's default is 20 reads a
 * second per shard, which a cluster multiplies by its hundreds of shards and a dev server
 * does not. Under a steady load each task then waited for the next allowed read, about
 * 29 ms on average (the server's `task_latency_load`), before a worker could receive it: a
 * conversation's first workflow task waited 31–35 ms instead of 5–6 (docs/performance.md,
 * "The dev server's task-queue reads"). A read costs one SQLite query and happens only
 * when tasks are there, so an idle server does not read more often.
 */
export const QUEUE_READ_ARGS = [
  '--dynamic-config-value', 'history.transferProcessorMaxPollRPS=200',
  '--dynamic-config-value', 'history.timerProcessorMaxPollRPS=200',
  '--dynamic-config-value', 'history.visibilityProcessorMaxPollRPS=200',
];

/**
 * Task-queue fairness on (temporal/fairness.shared.ts): tasks of a backlogged queue are
 * dispatched round-robin across organizations, so one organization's flood does not delay
 * the others' conversations (docs/performance.md, "Fair sharing between organizations").
 * The test suite's server takes the same arguments.
 */
export const FAIRNESS_ARGS = ['--dynamic-config-value', 'matching.enableFairness=true'];

/** What every dev server of ours runs with besides fairness: the tests' server (global-setup.ts) and startOnce's. */
export const DEV_SERVER_TUNING_ARGS = [...ONE_PARTITION_ARGS, ...QUEUE_READ_ARGS];

export async function startTemporalDevServer(opts: DevServerOptions): Promise<DevServer> {
  try {
    return await startOnce(opts);
  } catch (err) {
    // The CLI picks its internal service ports by binding port 0 and closing it again, so a
    // busy machine can take one before the server binds it and the server panics at start.
    // One retry absorbs that race; a real misconfiguration fails again, with its output.
    if (!(err instanceof ExitedDuringStartError)) throw err;
    opts.log?.(`${err.message}
retrying once`);
    return await startOnce(opts);
  }
}

async function startOnce(opts: DevServerOptions): Promise<DevServer> {
  const log = opts.log ?? (() => undefined);
  const ip = opts.ip ?? '127.0.0.1';
  const address = `${ip}:${opts.port}`;
  const args = [
    'server', 'start-dev',
    '--db-filename', opts.dbFile,
    '--ip', ip,
    '--port', String(opts.port),
    ...(opts.uiPort === undefined ? ['--headless'] : ['--ui-port', String(opts.uiPort)]),
    '--namespace', opts.namespace,
    ...searchAttributeCliArgs(),
    // The dev server's SQLite store has one connection; WAL + no fsync keeps it fast
    // enough locally (durability across machine crashes does not matter here).
    '--sqlite-pragma', 'journal_mode=WAL',
    '--sqlite-pragma', 'synchronous=OFF',
    '--log-level', 'warn',
    ...DEV_SERVER_TUNING_ARGS,
    ...(opts.fairness === false ? [] : FAIRNESS_ARGS),
  ];
  log(`starting ${opts.executable} ${args.join(' ')}`);
  const child = spawn(opts.executable, args, { stdio: ['ignore', 'pipe', 'pipe'] });

  // Keep the head (a Go panic's cause) and the tail of the output: they are the only
  // explanation when the server dies at start. Reading also keeps the pipes from filling.
  let head = '';
  let tail = '';
  const keep = (chunk: Buffer) => {
    if (head.length < 3000) head += chunk.toString();
    else tail = (tail + chunk.toString()).slice(-3000);
  };
  const output = () => (tail ? `${head}\n...\n${tail}` : head);
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject));

  const stop = async (timeoutMs = 10_000): Promise<void> => {
    if (hasExited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  try {
    await Promise.race([
      spawnError,
      exited.then((code) => {
        throw new ExitedDuringStartError(`temporal dev server exited with ${String(code)} during start:\n${output()}`);
      }),
      waitUntilServing(address, opts.namespace, opts.startTimeoutMs ?? 60_000, () => hasExited),
    ]);
  } catch (err) {
    await stop(2_000);
    throw err;
  }
  const started = `temporal dev server serving on ${address}`;
  log(opts.uiPort === undefined ? started : `${started}, UI on http://${ip}:${opts.uiPort}`);
  const kill = async (): Promise<void> => {
    if (hasExited) return;
    child.kill('SIGKILL');
    await exited;
  };
  return { address, stop, kill };
}

/** Polls until the frontend answers and the namespace exists (it is created at start). */
async function waitUntilServing(address: string, namespace: string, timeoutMs: number, gaveUp: () => boolean) {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline && !gaveUp()) {
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.withDeadline(Date.now() + 2_000, () =>
        connection!.workflowService.describeNamespace({ namespace }),
      );
      return;
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await connection?.close();
    }
  }
  throw new Error(`temporal dev server on ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}
