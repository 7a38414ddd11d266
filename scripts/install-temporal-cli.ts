/**
 * Entry point: makes sure the Temporal CLI is available (installing it into the cache if
 * needed) and prints its path on stdout. When it cannot be found or built it only warns:
 * the tests then let the SDK download a dev server, so CI should not stop here.
 */
import { findOrInstallTemporalCli } from './lib/temporal-cli';

async function main(): Promise<void> {
  const cli = await findOrInstallTemporalCli();
  if (!cli) {
    process.stderr.write('warning: temporal CLI unavailable (install Go or put `temporal` on PATH)\n');
    return;
  }
  process.stdout.write(`${cli}\n`);
}

void main();
