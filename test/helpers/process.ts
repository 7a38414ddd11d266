/**
 * Owns child processes in tests (e.g. `npx tsx src/main.ts worker`): spawn with env, wait
 * for an output line, kill with a chosen signal (SIGKILL for crash tests). Also free ports,
 * for servers a test starts itself.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { TestApp } from './app';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Whether any live process is in group `pgid`. Reads /proc because zombies still answer
 * `kill(-pgid, 0)` and PID 1 on these machines does not reap orphans.
 */
function groupAlive(pgid: number): boolean {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  }
  for (const pid of pids) {
    try {
      // Fields after the parenthesised command: state, ppid, pgrp, ...
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') return true;
    } catch {
      // Process ended while we looked.
    }
  }
  return false;
}

export interface SpawnedProcess {
  child: ChildProcess;
  /** Every stdout and stderr line so far, interleaved in arrival order. */
  lines: string[];
  /** Settles with the exit code / signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Resolves with the first line matching `pattern` after the line the previous
   * `waitForLine` matched (so two waits for the same pattern need two occurrences).
   * Rejects on timeout or if the process exits first, with the output in the message.
   */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /**
   * Sends `signal` to the whole process group and waits for the exit; SIGKILLs the group
   * if it is still alive after `timeoutMs`.
   */
  kill(signal?: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnProcess(
  command: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): SpawnedProcess {
  const child = spawn(command, args, {
    cwd: opts.cwd ?? process.cwd(),
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group: `npx tsx x.ts` is npx → tsx → node, and a signal sent to npx
    // alone would leave the real worker running (or, for SIGKILL, orphaned).
    detached: true,
  });
  const lines: string[] = [];
  let cursor = 0;
  const listeners = new Set<() => void>();
  const onData = (stream: NodeJS.ReadableStream) => {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts);
      for (const l of listeners) l();
    });
    stream.on('end', () => {
      if (partial) lines.push(partial);
      for (const l of listeners) l();
    });
  };
  onData(child.stdout!);
  onData(child.stderr!);

  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // 'close', not 'exit': it comes after the last output, so a waiter never misses a line.
    child.once('close', (code, signal) => {
      exitInfo = { code, signal };
      for (const l of listeners) l();
      resolve(exitInfo);
    });
  });

  const tail = () => lines.slice(-40).join('\n');

  const waitForLine = (pattern: RegExp, timeoutMs = 30_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        for (; cursor < lines.length; cursor++) {
          const match = lines[cursor]!.match(pattern);
          if (match) {
            cursor++;
            done();
            resolve(match);
            return;
          }
        }
        if (exitInfo) {
          done();
          reject(new Error(`process exited (${JSON.stringify(exitInfo)}) before printing ${pattern}:\n${tail()}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${pattern}:\n${tail()}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // Group already gone.
    }
  };

  const kill = async (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000) => {
    const pgid = child.pid!;
    signalGroup(signal);
    const deadline = Date.now() + timeoutMs;
    // The direct child (npx) may exit before the worker it started: wait for the group.
    while ((!exitInfo || groupAlive(pgid)) && Date.now() < deadline) await sleep(50);
    if (!exitInfo || groupAlive(pgid)) signalGroup('SIGKILL');
    return await exited;
  };

  return { child, lines, exited, waitForLine, kill };
}

/** A TCP port that was free a moment ago (the OS picked it; we closed it again). */
export async function freePort(): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * How long a workflow task waits on a worker's sticky queue before any worker may take it
 * (TEMPORAL_STICKY_QUEUE_TIMEOUT_MS; the SDK's default is 10 s). After a SIGKILL the dead
 * worker's workflows wait that long for their next task, so the tests' workers lower it.
 */
export const TEST_STICKY_QUEUE_TIMEOUT_MS = 1_000;

/**
 * Where a spawned service finds the test app's database, Redis keys and Temporal queue,
 * and the run's workflow bundle (global-setup.ts), so a spawned worker does not run
 * webpack again, and the tests' short sticky-queue timeout. The database is a migrated copy
 * of the run's template, so a spawned service does not migrate at start: loading the
 * migrator alone is about 0.35 s of CPU, in each of the run's ~35 spawned processes. An
 * `extra` value of undefined removes that variable.
 */
export function serviceEnv(t: TestApp, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    DATABASE_URL: t.databaseUrl,
    REDIS_KEY_PREFIX: t.config.REDIS_KEY_PREFIX,
    TEMPORAL_ADDRESS: t.config.TEMPORAL_ADDRESS_EFFECTIVE,
    TEMPORAL_TASK_QUEUE: t.config.TEMPORAL_TASK_QUEUE,
    TEMPORAL_WORKFLOW_BUNDLE_PATH: process.env.TEMPORAL_WORKFLOW_BUNDLE_PATH,
    TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: String(TEST_STICKY_QUEUE_TIMEOUT_MS),
    DATABASE_ACQUIRE_TIMEOUT_MS: String(t.config.DATABASE_ACQUIRE_TIMEOUT_MS),
    MIGRATE_ON_START: 'false',
    // Node 22+ keeps V8's code cache of the modules a spawned service loads (about 0.2 s of a
    // worker's ~1.2 s start-up on Node 24); Node 20 ignores the variable.
    NODE_COMPILE_CACHE: path.resolve(__dirname, '..', '..', 'node_modules', '.cache', 'node-compile-cache'),
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/**
 * Runs `src/main.ts <role>` as a process of its own, configured like the test app `t` plus
 * `extra`: from the run's compiled copy of the service (service-build.ts, plain node), from
 * another compiled `main.js` (`{ main }`: the production build's, scripts/build.ts), or
 * with `{ viaTsx: true }` (or outside jest's global setup) the way `npm start` does: node
 * with tsx's loader, no tsx CLI wrapper relaying signals.
 */
export function spawnService(
  role: 'api' | 'worker' | 'all',
  t: TestApp,
  extra: Record<string, string | undefined> = {},
  opts: { viaTsx?: boolean; main?: string } = {},
): SpawnedProcess {
  const build = process.env.TEST_SERVICE_BUILD_DIR;
  const entry = opts.main ? [opts.main] : build && !opts.viaTsx ? [path.join(build, 'src', 'main.js')] : ['--require', 'tsx/cjs', 'src/main.ts'];
  return spawnProcess(process.execPath, [...entry, role], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: serviceEnv(t, extra),
  });
}
