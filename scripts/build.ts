/**
 * Entry point of the production build (`npm run build`, and the image's build stage):
 * compiles src/, temporal/ and scripts/ to CommonJS JavaScript in `dist/` (SWC, see
 * scripts/lib/compile.ts), and bundles the workflow code once into
 * `dist/workflow-bundle.js`, which a worker loads through TEMPORAL_WORKFLOW_BUNDLE_PATH
 * instead of running webpack at every start. Then `node dist/src/main.js api|worker`
 * runs without tsx, TypeScript or SWC.
 *
 *   tsx scripts/build.ts [--out <dir>] [--with-tracing]
 *
 * --with-tracing puts Temporal's OpenTelemetry workflow interceptors in the bundle, for
 * workers that run with OTEL_EXPORTER_OTLP_ENDPOINT set (docs/observability.md).
 */
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { BUILD_TREES, WORKFLOW_BUNDLE_FILE } from './lib/build-layout';
import { compileTrees } from './lib/compile';
import { workflowsPath } from '../temporal/worker';

const ROOT = path.resolve(__dirname, '..');

export async function build(outDir: string, opts: { withTracing?: boolean; log?: (msg: string) => void } = {}): Promise<{ bundlePath: string }> {
  const log = opts.log ?? ((msg: string) => process.stdout.write(`${msg}\n`));
  await rm(outDir, { recursive: true, force: true });
  await compileTrees(ROOT, BUILD_TREES, outDir);
  log(`compiled ${BUILD_TREES.join(', ')} into ${outDir}`);
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    // webpack's statistics only at WARN: the build's output stays two lines.
    logger: new DefaultLogger('WARN'),
    workflowInterceptorModules: opts.withTracing ? [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')] : [],
  });
  const bundlePath = path.join(outDir, WORKFLOW_BUNDLE_FILE);
  await writeFile(bundlePath, code);
  log(`workflow bundle written to ${bundlePath}`);
  return { bundlePath };
}

if (require.main === module) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: 'dist' }, 'with-tracing': { type: 'boolean', default: false } } });
  build(path.resolve(ROOT, values.out), { withTracing: values['with-tracing'] }).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
