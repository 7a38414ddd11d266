/**
 * `npm run bench -- <name>` runs bench/<name>.bench.ts. Each benchmark measures our path
 * and a baseline in the same run and prints `ratio=<ours/baseline>` as its last line.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

const available = readdirSync(__dirname)
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.replace(/\.bench\.ts$/, ''));

async function main() {
  const name = process.argv[2];
  if (!name || !available.includes(name)) {
    process.stderr.write(`usage: npm run bench -- <${available.join('|')}>\n`);
    process.exit(2);
  }
  const mod = (await import(path.join(__dirname, `${name}.bench.ts`))) as { run(args: string[]): Promise<void> };
  await mod.run(process.argv.slice(3));
  process.exit(0);
}

main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
