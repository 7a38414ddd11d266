/**
 * jest's module runtime (jest.config.js, `runtime`) with V8's code cache under it.
 *
 * Every test file gets a module registry of its own, so jest compiles the service's ~2,500
 * modules again for each of the suite's 107 files (`vm.compileFunction`, nodejs/node#35375).
 * On Node 20 compiling was 17 % of a jest worker's busy time. So each compilation here
 * reuses V8's code cache of the same source: from this process's memory, else from a file
 * another worker (or an earlier run on the same V8) wrote, else it is produced and written.
 * Only parsing is skipped; the code runs as before. Measured on a full run (CONTRIBUTING.md, "How the suite runs"):
 * Node 20 247 s → 226 s; Node 24 222.6 s either way (its V8 does not pay that parse again).
 *
 * Why hand-written: jest has no code-cache option (jestjs/jest#9457), and v8-compile-cache
 * hooks Node's own `require`, which jest's module system does not use. jest-runtime calls
 * `compileFunction` on the `node:vm` module object, so wrapping it there reaches every
 * compilation without copying jest's `compile` method.
 *
 * A cache entry is looked up by the exact source (in memory: compared whole; on disk: its
 * SHA-256 names the file), never by file name alone: V8 checks little more than the source's
 * length before using cached data. V8 refuses data from another V8 version or other flags
 * (`cachedDataRejected`); the function is then compiled from source as usual. Set
 * JEST_CODE_CACHE=off to compile without it.
 */
const { createHash } = require('node:crypto');
const { mkdirSync, readFileSync, renameSync, writeFileSync } = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

if (process.env.JEST_CODE_CACHE !== 'off') {
  const compileFunction = vm.compileFunction;
  // Beside tsc's incremental state, one directory per V8 version and architecture: the two
  // Node versions of a CI run never share entries, and removing node_modules removes them.
  const dir = path.join(__dirname, '../../node_modules/.cache', `jest-code-cache-${process.versions.v8}-${process.arch}`);
  mkdirSync(dir, { recursive: true });
  /** Cached data by file name, with the source it was made from. */
  const inMemory = new Map();

  const fromDisk = (file) => {
    try {
      return readFileSync(file);
    } catch {
      return undefined;
    }
  };
  const toDisk = (file, data) => {
    // Written under a name of its own, then renamed: a worker reading meanwhile sees the whole file or none.
    const partial = `${file}.${process.pid}`;
    try {
      writeFileSync(partial, data);
      renameSync(partial, file);
    } catch {
      // A cache that cannot be written only costs the next compilation its parse.
    }
  };

  vm.compileFunction = function compileWithCodeCache(code, params, options) {
    const known = inMemory.get(options.filename);
    if (known && known.code === code) {
      const fn = compileFunction.call(this, code, params, { ...options, cachedData: known.data });
      if (!fn.cachedDataRejected) return fn;
    }
    const file = path.join(dir, createHash('sha256').update(params.join(',')).update('\0').update(code).digest('hex'));
    const stored = fromDisk(file);
    if (stored) {
      const fn = compileFunction.call(this, code, params, { ...options, cachedData: stored });
      if (!fn.cachedDataRejected) {
        inMemory.set(options.filename, { code, data: stored });
        return fn;
      }
    }
    const fn = compileFunction.call(this, code, params, { ...options, produceCachedData: true });
    if (fn.cachedDataProduced) {
      inMemory.set(options.filename, { code, data: fn.cachedData });
      toDisk(file, fn.cachedData);
    }
    return fn;
  };
}

module.exports = require('jest-runtime');
