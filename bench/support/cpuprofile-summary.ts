/**
 * `npx tsx bench/support/cpuprofile-summary.ts <file.cpuprofile> [top=25]`: where a V8 CPU
 * profile (`node --cpu-prof`) spent its samples, as shares of the busy (non-idle) time:
 * self time per function, self time per package (node_modules/<pkg>, src/…, node:…), and
 * inclusive time of the heaviest frames. Shares, not milliseconds, are what compare
 * across runs on a shared machine.
 */
import { readFileSync } from 'node:fs';
import { packageOf } from './frame-package';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: cpuprofile-summary <file.cpuprofile> [top]');
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const nameOf = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${packageOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const IDLE = new Set(['(idle)', '(program)']);
let busy = 0;
const fnSelf = new Map<string, number>();
const pkgSelf = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  if (IDLE.has(n.callFrame.functionName)) continue;
  busy += t;
  fnSelf.set(nameOf(n), (fnSelf.get(nameOf(n)) ?? 0) + t);
  const pkg = n.callFrame.functionName === '(garbage collector)' ? '(garbage collector)' : packageOf(n.callFrame.url);
  pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + t);
  // Inclusive: every distinct frame on the stack gets the sample once.
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const name = nameOf(byId.get(cur)!);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + t);
  }
}
const total = profile.timeDeltas.reduce((a, b) => a + b, 0);
const pct = (t: number) => `${((100 * t) / busy).toFixed(1).padStart(5)} %`;
const print = (title: string, m: Map<string, number>, limit = top) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, limit)) console.log(`${pct(t)}  ${k}`);
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s profiled, busy ${(busy / 1e6).toFixed(1)} s (${((100 * busy) / total).toFixed(0)} %)`);
print('self time by package', pkgSelf);
print('self time by function', fnSelf);
print('inclusive time by function', inclusive, top * 2);
