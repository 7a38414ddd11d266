/**
 * Owns where the production build (scripts/build.ts, the image's build stage) puts its
 * output: each `<tree>/<file>.ts` of BUILD_TREES becomes `dist/<tree>/<file>.js`, and the
 * workflow bundle is `dist/workflow-bundle.js`. Kept apart from the build itself so that the
 * deployment files' checks (test/deploy) can map a `node dist/…` command back to its source
 * without loading SWC or the Temporal worker.
 */
import path from 'node:path';

export const BUILD_TREES = ['src', 'temporal', 'scripts'] as const;
export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';
export const BUILD_OUT_DIR = 'dist';

/**
 * The source file (relative to the repository) that the build compiles into `built`
 * (relative to the image's working directory, e.g. `dist/scripts/cli.js`); undefined when
 * the build produces no such file from a source tree.
 */
export function sourceOfBuilt(built: string): string | undefined {
  const rel = path.posix.normalize(built);
  const [out, tree, ...rest] = rel.split('/');
  if (out !== BUILD_OUT_DIR || !(BUILD_TREES as readonly string[]).includes(tree!) || rest.length === 0) return undefined;
  if (!rel.endsWith('.js')) return undefined;
  return path.posix.join(tree!, ...rest).replace(/\.js$/, '.ts');
}
