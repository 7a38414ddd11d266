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
const { readFileSync } = require('node:fs');
const Sequencer = require('@jest/test-sequencer').default;

/** What makes a file heavy: it spawns service processes or launches a browser. */
const HEAVY = /\bspawnService\(|\brunReplicatedDrill\(|\bchromium\.launch\(/;

class SpreadHeavyFiles extends Sequencer {
  sort(tests) {
    const ordered = super.sort(tests);
    const isHeavy = (test) => HEAVY.test(readFileSync(test.path, 'utf8'));
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
}

module.exports = SpreadHeavyFiles;
