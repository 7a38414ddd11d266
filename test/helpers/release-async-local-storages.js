/**
 * Runs before each test file (jest.config.js, `setupFiles`): disables the AsyncLocalStorage
 * instances that the jest worker's earlier files enabled.
 *
 * jest evaluates every module again for each file, so each file makes its own instances
 * (MikroORM's request and transaction contexts, each Temporal connection's call context,
 * the workflow sandbox's scopes, ...), about ten per file. On Node 20 an instance that has
 * run once stays in one process-wide list, and every promise and every native async
 * resource created afterwards calls into each instance of that list (`_propagate`, from
 * the init hook): a worker that had run six files had 65 of them, and a CPU profile of a
 * full run on Node 20 found about 12 s of the jest workers' time in those calls. The
 * earlier files are done, so their instances have nothing left to carry; one that is still
 * used runs again and is enabled anew by it.
 * Node 22+ keeps AsyncLocalStorage in V8's async context frames, without such a list or hook
 * (no `_enable`): there this does nothing.
 *
 * Why by hand: Node keeps the list internal, so the instances are collected here as they
 * are enabled, through the one class every file shares (core modules are not re-evaluated).
 */
const { AsyncLocalStorage } = require('node:async_hooks');

const prototype = AsyncLocalStorage.prototype;
const ENABLED = Symbol.for('wfa.test.enabledAsyncLocalStorages');

/** Wraps `_enable` (once per jest worker) so that every instance enabled from now on is recorded. */
function recordEnabled() {
  const enabled = new Set();
  const enable = prototype._enable;
  prototype._enable = function enableAndRecord() {
    enabled.add(this);
    return enable.call(this);
  };
  return enabled;
}

if (typeof prototype._enable === 'function') {
  const enabled = (prototype[ENABLED] ??= recordEnabled());
  for (const storage of enabled) storage.disable();
  enabled.clear();
}
