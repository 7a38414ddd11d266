/**
 * Owns finding the Temporal CLI (which embeds the dev server) on this machine, and
 * installing it once into a cache directory outside the work tree when it is missing.
 * Docker does not run here, so this binary is our only Temporal server.
 */
import { findOrInstallTool, type GoTool } from './go-tools';

/** Later CLI tags carry a `replace` directive and cannot be `go install`ed. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

const TEMPORAL_CLI: GoTool = { name: 'temporal', module: TEMPORAL_CLI_MODULE, preferPath: true };

/**
 * Path of a `temporal` executable: on PATH, else in the cache, else freshly built with
 * `go install` (minutes the first time; output streams to stderr). `undefined` when none is
 * possible: callers then let the SDK download a server (`{type: 'cached-download'}`).
 */
export async function findOrInstallTemporalCli(
  log: (msg: string) => void = (msg) => process.stderr.write(`${msg}\n`),
): Promise<string | undefined> {
  const cli = await findOrInstallTool(TEMPORAL_CLI, log);
  if (!cli) log('temporal CLI unavailable; the SDK will download a dev server');
  return cli;
}
