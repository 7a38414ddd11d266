/**
 * The pages a newcomer reads stay short and current: README, CONTRIBUTING and
 * docs/performance.md within their line budgets (issue #50), docs/configuration.md equal to
 * what `npm run docs:config` generates from the config schema, and every relative link of
 * the docs pointing at a file that exists.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { CONFIG_DOCS_FILE, configDocsGaps, renderConfigDocs } from '../../scripts/lib/config-docs';

const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const lineCount = (file: string) => read(file).replace(/\n$/, '').split('\n').length;

function markdownFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(rel);
    return entry.name.endsWith('.md') ? [rel] : [];
  });
}

it.each([
  ['README.md', 250],
  ['CONTRIBUTING.md', 200],
  ['docs/performance.md', 400],
])('%s has at most %i lines', (file, budget) => {
  expect(lineCount(file)).toBeLessThanOrEqual(budget);
});

it('the README shows how to start the service and run the tests', () => {
  const readme = read('README.md');
  expect(readme).toContain('npm install && npm start');
  expect(readme).toContain('npm test');
});

it('every variable of the config schema has a description, and every description a variable', () => {
  expect(configDocsGaps()).toEqual({ undocumented: [], unknown: [] });
});

it(`${CONFIG_DOCS_FILE} is what \`npm run docs:config\` generates (run it after changing src/config.ts)`, () => {
  expect(read(CONFIG_DOCS_FILE)).toBe(renderConfigDocs());
});

it('every relative link of the docs points at a file that exists', () => {
  const files = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'clients/typescript/README.md', ...markdownFiles('docs')];
  const broken: string[] = [];
  for (const file of files) {
    const text = read(file).replace(/```[\s\S]*?```/g, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^(https?:|mailto:|#)/.test(target!)) continue;
      const resolved = path.join(ROOT, path.dirname(file), decodeURIComponent(target!.split('#')[0]!));
      // Links out of the repository (the API contract beside it) are not checked here.
      if (resolved.startsWith(ROOT + path.sep) && !existsSync(resolved)) broken.push(`${file} → ${target}`);
    }
  }
  expect(broken).toEqual([]);
});
