/**
 * Jest runs TypeScript through SWC (transpile only); `npm test` type-checks with tsc first.
 * Jest's module system cannot load ESM-only packages on Node 20 (jose 6, oidc-provider,
 * openid-client and its oauth4webapi), so SWC compiles those to CommonJS too instead of
 * pinning older CommonJS releases.
 */
const ESM_ONLY = ['jose', 'oidc-provider', 'openid-client', 'oauth4webapi'];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
    [`/node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  // On Node 20, what earlier files of a jest worker left in AsyncLocalStorage's hook is let go.
  setupFiles: ['<rootDir>/test/helpers/release-async-local-storages.js'],
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  // Four test files at a time on two cores: the slowest files (crash tests, outages, exports)
  // mostly wait on spawned processes and Temporal, their jest process using a third of a
  // core or less, so more files overlap those waits. With three, a full run left about a
  // quarter of the two cores idle: 268.7 s against 250.2 s with four (CONTRIBUTING.md, "How the suite runs").
  maxWorkers: 4,
  // A jest worker keeps about 70 MB of every file it ran (each file loads the service anew, and
  // not all of it is freed); past 600 MB it is replaced after its file. The smaller heap costs
  // less to collect: 269 s against 286 s for the suite, 10 % less CPU (CONTRIBUTING.md, "How the suite runs").
  workerIdleMemoryLimit: '600MB',
  // The files that start processes of their own are spread through the run, not started together.
  testSequencer: '<rootDir>/test/helpers/spread-sequencer.js',
  testTimeout: 60000,
  // Each file compiles the service's modules anew; V8's code cache spares Node 20 the parse
  // (247 s → 226 s for the suite; CONTRIBUTING.md, "How the suite runs"). JEST_CODE_CACHE=off runs without it.
  runtime: '<rootDir>/test/helpers/code-cache-runtime.js',
};
