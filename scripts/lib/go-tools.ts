/**
 * Owns finding the command-line tools this project builds from Go modules (the Temporal
 * CLI, helm), and installing them once into a cache directory outside the work tree with
 * `go install` when they are missing. Tests only look them up (`findTool`); scripts that
 * run before the tests (.ci/run, `npm test`'s pretest) install them (`findOrInstallTool`).
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

/** `~/.cache/workflow-automation/bin` (or under XDG_CACHE_HOME): shared by every work tree. */
export function toolCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const cacheHome = env.XDG_CACHE_HOME || path.join(env.HOME || homedir(), '.cache');
  return path.join(cacheHome, 'workflow-automation', 'bin');
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export interface GoTool {
  /** The executable's name, e.g. `helm`. */
  name: string;
  /** What `go install` builds, with its version: `module/path/cmd/name@vX.Y.Z`. */
  module: string;
  /** Look on PATH before the cache (true), or only use the pinned build in the cache. */
  preferPath: boolean;
}

/** The tool's path, on PATH (when `preferPath`) or in the cache; `undefined` when absent. */
export function findTool(tool: GoTool): string | undefined {
  if (tool.preferPath) {
    const onPath = findOnPath(tool.name);
    if (onPath) return onPath;
  }
  const cached = path.join(toolCacheDir(), tool.name);
  return isExecutable(cached) ? cached : undefined;
}

/**
 * The tool's path, found (`findTool`) or freshly built with `go install` into the cache
 * (minutes the first time; output streams to stderr). `undefined` when `go` is missing or
 * the build fails: callers say what that costs.
 */
export async function findOrInstallTool(
  tool: GoTool,
  log: (msg: string) => void = (msg) => process.stderr.write(`${msg}\n`),
): Promise<string | undefined> {
  const found = findTool(tool);
  if (found) return found;

  const go = findOnPath('go');
  if (!go) {
    log(`${tool.name} not found and \`go\` is not on PATH`);
    return undefined;
  }
  const cacheDir = toolCacheDir();
  const cached = path.join(cacheDir, tool.name);
  log(`installing ${tool.module} into ${cacheDir} (takes minutes the first time)`);
  mkdirSync(cacheDir, { recursive: true });
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(go, ['install', tool.module], {
      env: { ...process.env, GOBIN: cacheDir },
      // Stdout too goes to stderr: callers (e.g. .ci/run) read the path from our stdout.
      stdio: ['ignore', process.stderr, process.stderr],
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0 || !isExecutable(cached)) {
    log(`go install ${tool.module} failed (exit ${String(code)})`);
    return undefined;
  }
  return cached;
}
