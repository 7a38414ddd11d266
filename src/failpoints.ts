/**
 * Owns test-only crash points: `FAILPOINTS=name1,name2` makes the process SIGKILL itself
 * when it reaches `failpoint(name)`. Crash tests use them to die at an exact moment (between
 * a database commit and the Temporal start) that no outside signal could hit reliably.
 * `name:0.3` arms a point at random: each time it is reached, the process dies with that
 * probability (the replicated drill's API dies after the commit of a request it picks at random).
 */
import type { Config } from './config';

export function failpoint(config: Pick<Config, 'FAILPOINTS'>, name: string, detail?: string): void {
  if (config.FAILPOINTS === '') return;
  for (const entry of config.FAILPOINTS.split(',')) {
    const [armed, chance] = entry.trim().split(':');
    if (armed !== name) continue;
    if (chance !== undefined && Math.random() >= Number(chance)) return;
    process.stderr.write(`failpoint ${name}: SIGKILL${detail ? ` (${detail})` : ''}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
}
