/**
 * Owns the run's compiled copy of the service for spawned processes: global-setup.ts
 * transpiles src/ and temporal/ to CommonJS once per run (SWC, type stripping only, with
 * the same settings jest's transform uses), so that a spawned `src/main.ts worker` or `api`
 * starts as plain node instead of compiling and resolving every file through tsx's loader
 * at each spawn (about 1 s of CPU per spawn, a third of a worker's start-up). The copy
 * lives inside the repository (`.test-build/<run>/`), so that its imports find
 * node_modules as src/ does; global-teardown.ts removes it.
 */
import { mkdir, readdir, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { transformFile } from '@swc/core';

const ROOT = path.resolve(__dirname, '..', '..');
const COMPILED_TREES = ['src', 'temporal'];

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')).map((e) => path.join(e.parentPath, e.name));
}

/** Compiles src/ and temporal/ into `.test-build/<runId>/` and returns that directory. */
export async function buildServiceCode(runId: string): Promise<string> {
  const outDir = path.join(ROOT, '.test-build', runId);
  await rm(outDir, { recursive: true, force: true });
  const files = (await Promise.all(COMPILED_TREES.map((tree) => sourceFiles(path.join(ROOT, tree))))).flat();
  await Promise.all(
    files.map(async (file) => {
      const { code } = await transformFile(file, {
        jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
        module: { type: 'commonjs' },
        swcrc: false,
        configFile: false,
      });
      const out = path.join(outDir, path.relative(ROOT, file)).replace(/\.ts$/, '.js');
      await mkdir(path.dirname(out), { recursive: true });
      await writeFile(out, code);
    }),
  );
  return outDir;
}

export async function removeServiceCode(outDir: string): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
  // The parent stays only while another run's copy is in it.
  await rmdir(path.dirname(outDir)).catch(() => undefined);
}
