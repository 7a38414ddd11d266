/**
 * `npx tsx bench/support/heapprofile-summary.ts <file.heapprofile> [top=30]`: bytes
 * allocated per function and per package in a sampling heap profile
 * (bench `--heap-prof`), as shares of all sampled allocations.
 */
import { readFileSync } from 'node:fs';
import { packageOf } from './frame-package';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: heapprofile-summary <file.heapprofile> [top]');
const top = Number(topArg ?? 30);
const { head } = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };

const byFn = new Map<string, number>();
const byPkg = new Map<string, number>();
/** Bytes by the first frame of our own code (src/) on the stack: who asked for it. */
const byOurs = new Map<string, number>();
let total = 0;
const walk = (n: HeapNode, ours: string | undefined) => {
  const here = packageOf(n.callFrame.url);
  const name = `${n.callFrame.functionName || '(anonymous)'} ${here}:${n.callFrame.lineNumber + 1}`;
  const mine = here.startsWith('src/') ? name : ours;
  if (n.selfSize > 0) {
    total += n.selfSize;
    byFn.set(name, (byFn.get(name) ?? 0) + n.selfSize);
    byPkg.set(here, (byPkg.get(here) ?? 0) + n.selfSize);
    const k = mine ?? '(outside src/)';
    byOurs.set(k, (byOurs.get(k) ?? 0) + n.selfSize);
  }
  for (const c of n.children) walk(c, mine);
};
walk(head, undefined);
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
};
console.log(`${file}: ${(total / 2 ** 20).toFixed(1)} MiB sampled`);
print('allocated by package', byPkg);
print('allocated by function', byFn);
print('allocated under our frame (innermost src/ function on the stack)', byOurs);
