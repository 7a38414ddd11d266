/** Owns stopping the Temporal dev server that global-setup.ts started for the jest run. */
export default async function globalTeardown(): Promise<void> {
  const env = globalThis.__TEMPORAL_TEST_ENV__;
  globalThis.__TEMPORAL_TEST_ENV__ = undefined;
  await env?.teardown();
}
