/**
 * Owns stopping the Temporal dev server, removing the workflow bundle and the compiled copy
 * of the service, and dropping the template database that global-setup.ts made for the run.
 */
import { rm } from 'node:fs/promises';
import { dropDatabase } from '../../src/db/orm';
import { removeServiceCode } from './service-build';

export default async function globalTeardown(): Promise<void> {
  const env = globalThis.__TEMPORAL_TEST_ENV__;
  globalThis.__TEMPORAL_TEST_ENV__ = undefined;
  const bundleDir = globalThis.__WORKFLOW_BUNDLE_DIR__;
  globalThis.__WORKFLOW_BUNDLE_DIR__ = undefined;
  const templateUrl = globalThis.__TEMPLATE_DATABASE_URL__;
  globalThis.__TEMPLATE_DATABASE_URL__ = undefined;
  const serviceBuildDir = globalThis.__SERVICE_BUILD_DIR__;
  globalThis.__SERVICE_BUILD_DIR__ = undefined;
  await Promise.all([
    serviceBuildDir && removeServiceCode(serviceBuildDir),
    env?.teardown(),
    bundleDir && rm(bundleDir, { recursive: true, force: true }),
    templateUrl && dropDatabase(templateUrl),
  ]);
}
