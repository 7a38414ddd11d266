/**
 * Owns test-only crash points: `FAILPOINTS=name1,name2` makes the process SIGKILL itself
 * when it reaches `failpoint(name)`. Crash tests use them to die at an exact moment (between
 * a database commit and the Temporal start) that no outside signal could hit reliably.
 */
import type { Config } from './config';

export function failpoint(config: Pick<Config, 'FAILPOINTS'>, name: string): void {
  if (config.FAILPOINTS === '') return;
  if (!config.FAILPOINTS.split(',').map((s) => s.trim()).includes(name)) return;
  process.stderr.write(`failpoint ${name}: SIGKILL\n`);
  process.kill(process.pid, 'SIGKILL');
}
