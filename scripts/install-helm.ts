/**
 * Entry point: makes sure the pinned helm is built into the cache (see scripts/lib/helm.ts)
 * and prints its path on stdout. Run by .ci/run and by `npm test` (pretest) before jest:
 * the chart test only looks helm up. When helm cannot be built it only warns, and that
 * test then fails saying how to install it.
 */
import { findOrInstallHelm, helmMissingMessage } from './lib/helm';

async function main(): Promise<void> {
  const helm = await findOrInstallHelm();
  if (!helm) {
    process.stderr.write(`warning: ${helmMissingMessage()}\n`);
    return;
  }
  process.stdout.write(`${helm}\n`);
}

void main();
