/**
 * Owns stopping the Temporal dev server, removing the workflow bundle and the compiled copy
 * of the service, and dropping the run's databases: the template global-setup.ts made and
 * the test files' copies (test-databases.ts).
 */
import { rm } from 'node:fs/promises';
import { removeServiceCode } from './service-build';
import { dropRunDatabases } from './test-databases';

export default async function globalTeardown(): Promise<void> {
  const env = globalThis.__TEMPORAL_TEST_ENV__;
  globalThis.__TEMPORAL_TEST_ENV__ = undefined;
  const bundleDir = globalThis.__WORKFLOW_BUNDLE_DIR__;
  globalThis.__WORKFLOW_BUNDLE_DIR__ = undefined;
  const runId = process.env.TEST_RUN_ID;
  const serviceBuildDir = globalThis.__SERVICE_BUILD_DIR__;
  globalThis.__SERVICE_BUILD_DIR__ = undefined;
  await Promise.all([
    serviceBuildDir && removeServiceCode(serviceBuildDir),
    env?.teardown(),
    bundleDir && rm(bundleDir, { recursive: true, force: true }),
    runId && dropRunDatabases(runId),
  ]);
}
