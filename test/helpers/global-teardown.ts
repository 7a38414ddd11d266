/** Owns stopping the Temporal dev server and removing the workflow bundle that global-setup.ts made for the jest run. */
import { rm } from 'node:fs/promises';

export default async function globalTeardown(): Promise<void> {
  const env = globalThis.__TEMPORAL_TEST_ENV__;
  globalThis.__TEMPORAL_TEST_ENV__ = undefined;
  const bundleDir = globalThis.__WORKFLOW_BUNDLE_DIR__;
  globalThis.__WORKFLOW_BUNDLE_DIR__ = undefined;
  await Promise.all([env?.teardown(), bundleDir && rm(bundleDir, { recursive: true, force: true })]);
}
