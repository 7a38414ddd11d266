/**
 * Owns turning the service's TypeScript into CommonJS JavaScript with SWC (type stripping
 * only: `tsc --noEmit` is the type check), file by file with the settings jest's transform
 * uses. Used by the production build (scripts/build.ts → dist/) and by the tests' compiled
 * copy of the service (test/helpers/service-build.ts). Files other than TypeScript in those
 * trees (the rollup functions' SQL) are copied beside the output, where the code reads them,
 * and so is package.json, which the code imports from the root (its version, for User-Agent).
 */
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { transformFile } from '@swc/core';

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** Compiles each of `trees` (directories under `root`) into `outDir`, keeping their layout. */
export async function compileTrees(root: string, trees: readonly string[], outDir: string): Promise<void> {
  const files = (await Promise.all(trees.map((tree) => filesUnder(path.join(root, tree))))).flat();
  await Promise.all(
    files.map(async (file) => {
      const target = path.join(outDir, path.relative(root, file));
      await mkdir(path.dirname(target), { recursive: true });
      if (file.endsWith('.d.ts')) return;
      if (!file.endsWith('.ts')) {
        await copyFile(file, target);
        return;
      }
      const { code } = await transformFile(file, {
        jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
        module: { type: 'commonjs' },
        swcrc: false,
        configFile: false,
      });
      await writeFile(target.replace(/\.ts$/, '.js'), code);
    }),
  );
  await copyFile(path.join(root, 'package.json'), path.join(outDir, 'package.json'));
}
