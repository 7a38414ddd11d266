/**
 * Owns the run's compiled copy of the service for spawned processes: global-setup.ts
 * transpiles src/ and temporal/ to CommonJS once per run (SWC, type stripping only, with
 * the same settings jest's transform uses), so that a spawned `src/main.ts worker` or `api`
 * starts as plain node instead of compiling and resolving every file through tsx's loader
 * at each spawn (about 1 s of CPU per spawn, a third of a worker's start-up). The copy
 * lives inside the repository (`.test-build/<run>/`), so that its imports find
 * node_modules as src/ does; global-teardown.ts removes it.
 */
import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { compileTrees } from '../../scripts/lib/compile';

const ROOT = path.resolve(__dirname, '..', '..');
const COMPILED_TREES = ['src', 'temporal'];

/** Compiles src/ and temporal/ into `.test-build/<runId>/` (as scripts/build.ts does into dist/) and returns that directory. */
export async function buildServiceCode(runId: string): Promise<string> {
  const outDir = path.join(ROOT, '.test-build', runId);
  await rm(outDir, { recursive: true, force: true });
  await compileTrees(ROOT, COMPILED_TREES, outDir);
  return outDir;
}

export async function removeServiceCode(outDir: string): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
  // The parent stays only while another run's copy is in it.
  await rmdir(path.dirname(outDir)).catch(() => undefined);
}
