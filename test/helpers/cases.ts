/**
 * Runs every `*.cases.ts` module of a directory in that directory's one test file, each in
 * a describe block named after it (`runCases(__dirname)`).
 *
 * Why: jest gives each test file a module registry of its own, so each file loads the
 * service, its ORM and the Temporal client anew: about 1.5 s of CPU per file, a third of
 * the suite's CPU when every case had a file of its own (CONTRIBUTING.md, "How the suite runs"). Cases that boot
 * their own app and share no processes are grouped instead; each keeps its own hooks, app
 * and database, scoped to its describe block. Files that start processes of their own stay
 * separate `*.test.ts` files, so the run can spread them out (spread-sequencer.js).
 *
 * A case module sets no timeout of its own: `jest.setTimeout` applies to the whole file, so
 * the group's file sets the longest one its cases need.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

export const CASES_SUFFIX = '.cases.ts';
/** How a group's test file runs its directory's cases (spread-sequencer.js looks for the same line). */
export const GROUP_FILE_CALL = /^runCases\(__dirname\);$/m;

/** The case modules of `dir`, in name order. */
export function caseFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(CASES_SUFFIX))
    .sort();
}

export function runCases(dir: string): void {
  const files = caseFiles(dir);
  if (files.length === 0) throw new Error(`no ${CASES_SUFFIX} modules in ${dir}`);
  for (const file of files) {
    describe(file.slice(0, -CASES_SUFFIX.length), () => {
      require(path.join(dir, file));
    });
  }
}
