/**
 * Owns finding the Temporal CLI (which embeds the dev server) on this machine, and
 * installing it once into a cache directory outside the work tree when it is missing.
 * Docker does not run here, so this binary is our only Temporal server.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** Later CLI tags carry a `replace` directive and cannot be `go install`ed. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export function temporalCliCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const cacheHome = env.XDG_CACHE_HOME || path.join(env.HOME || homedir(), '.cache');
  return path.join(cacheHome, 'workflow-automation', 'bin');
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Path of a `temporal` executable: on PATH, else in the cache, else freshly built with
 * `go install` (minutes the first time; output streams to stderr). `undefined` when none is
 * possible: callers then let the SDK download a server (`{type: 'cached-download'}`).
 */
export async function findOrInstallTemporalCli(
  log: (msg: string) => void = (msg) => process.stderr.write(`${msg}\n`),
): Promise<string | undefined> {
  const onPath = findOnPath('temporal');
  if (onPath) return onPath;

  const cacheDir = temporalCliCacheDir();
  const cached = path.join(cacheDir, 'temporal');
  if (isExecutable(cached)) return cached;

  const go = findOnPath('go');
  if (!go) {
    log('temporal CLI not found and `go` is not on PATH; the SDK will download a dev server');
    return undefined;
  }
  log(`installing ${TEMPORAL_CLI_MODULE} into ${cacheDir} (takes minutes the first time)`);
  mkdirSync(cacheDir, { recursive: true });
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(go, ['install', TEMPORAL_CLI_MODULE], {
      env: { ...process.env, GOBIN: cacheDir },
      // Stdout too goes to stderr: callers (e.g. .ci/run) read the path from our stdout.
      stdio: ['ignore', process.stderr, process.stderr],
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0 || !isExecutable(cached)) {
    log(`go install ${TEMPORAL_CLI_MODULE} failed (exit ${String(code)})`);
    return undefined;
  }
  return cached;
}
