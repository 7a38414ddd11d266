/**
 * The order jest starts the test files in: jest's own (the files that failed last, then the
 * longest, or the largest when it has no timings, as on a fresh clone), with the files that
 * start processes of their own (service processes, a browser) spread through the first
 * three quarters of the run instead of all starting together.
 *
 * Why: these files each keep a core or more busy while they run (an API or worker process
 * loading the service, replaying histories, a browser), and they are the largest files, so
 * without this they all start in the first minute: on two cores, three of them at once left
 * every other process of theirs waiting for a core, and their timing-sensitive steps (a
 * debounce window, a form prompt after a crash) failed on a slow machine.
 */
const { readdirSync, readFileSync } = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

/** What makes a file heavy: it spawns service processes or launches a browser. */
const HEAVY = /\bspawnService\(|\brunReplicatedDrill\(|\bchromium\.launch\(/;

/**
 * A test file's source with the `*.cases.ts` modules it runs (`runCases(__dirname)`,
 * test/helpers/cases.ts): the group's file itself is a few lines.
 */
function sourceOf(file) {
  const own = readFileSync(file, 'utf8');
  // GROUP_FILE_CALL of cases.ts (this file is plain JavaScript, loaded untransformed).
  if (!/^runCases\(__dirname\);$/m.test(own)) return own;
  const dir = path.dirname(file);
  const cases = readdirSync(dir).filter((f) => f.endsWith('.cases.ts'));
  return [own, ...cases.map((f) => readFileSync(path.join(dir, f), 'utf8'))].join('\n');
}

class SpreadHeavyFiles extends Sequencer {
  sort(tests) {
    const sources = new Map(tests.map((test) => [test.path, sourceOf(test.path)]));
    const ordered = this.longestFirst(tests, (test) => sources.get(test.path).length);
    const isHeavy = (test) => HEAVY.test(sources.get(test.path));
    const heavy = ordered.filter(isHeavy);
    const light = ordered.filter((test) => !heavy.includes(test));
    // A heavy file, then `gap` light ones, and so on: the heavy files are spread over
    // about three quarters of the light ones, the rest of those end the run.
    const gap = Math.max(1, Math.floor((light.length * 3) / 4 / Math.max(1, heavy.length)));
    const out = [];
    while (heavy.length > 0 || light.length > 0) {
      if (heavy.length > 0) out.push(heavy.shift());
      out.push(...light.splice(0, gap));
    }
    return out;
  }

  /**
   * jest's own order (Sequencer.sort): the files that failed last, then those without
   * timings, then the longest; without timings, the largest first, here by their source
   * with their cases, not by the group file's few lines.
   */
  longestFirst(tests, sizeOf) {
    for (const test of tests) test.duration = this.time(test);
    return [...tests].sort((a, b) => {
      const failedA = this.hasFailed(a);
      if (failedA !== this.hasFailed(b)) return failedA ? -1 : 1;
      if ((a.duration == null) !== (b.duration == null)) return a.duration == null ? -1 : 1;
      if (a.duration != null && b.duration != null) return b.duration - a.duration;
      return sizeOf(b) - sizeOf(a);
    });
  }
}

module.exports = SpreadHeavyFiles;
