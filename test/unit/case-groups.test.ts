/**
 * The `*.cases.ts` modules run only through their directory's test file (test/helpers/cases.ts):
 * a case module left where no test file runs it, or one that sets the whole file's timeout,
 * would go unnoticed otherwise.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CASES_SUFFIX, GROUP_FILE_CALL } from '../helpers/cases';

const TEST_ROOT = path.join(__dirname, '..');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)],
  );
}

const all = filesUnder(TEST_ROOT);
const cases = all.filter((f) => f.endsWith(CASES_SUFFIX));
const groups = all.filter((f) => f.endsWith('.test.ts') && GROUP_FILE_CALL.test(readFileSync(f, 'utf8')));

describe('case groups', () => {
  it('every case module is run by the one test file of its directory', () => {
    expect(cases.length).toBeGreaterThan(0);
    const unrun = cases.filter((c) => groups.filter((g) => path.dirname(g) === path.dirname(c)).length !== 1);
    expect(unrun.map((c) => path.relative(TEST_ROOT, c))).toEqual([]);
  });

  it('every group file has cases to run', () => {
    const empty = groups.filter((g) => !cases.some((c) => path.dirname(c) === path.dirname(g)));
    expect(empty.map((g) => path.relative(TEST_ROOT, g))).toEqual([]);
  });

  it('no case module sets the timeout of the whole file', () => {
    const setting = cases.filter((c) => /\bjest\.setTimeout\(/.test(readFileSync(c, 'utf8')));
    expect(setting.map((c) => path.relative(TEST_ROOT, c))).toEqual([]);
  });
});
