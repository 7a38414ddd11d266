/**
 * Owns where helm comes from: the chart in deploy/helm is linted and rendered by helm
 * v3.22.0, built once from the Go module proxy into the same cache as the Temporal CLI.
 * The pinned build is used even when another helm is on PATH, so that every machine
 * validates the chart with the same helm.
 */
import { findOrInstallTool, findTool, toolCacheDir, type GoTool } from './go-tools';

export const HELM: GoTool = { name: 'helm', module: 'helm.sh/helm/v3/cmd/helm@v3.22.0', preferPath: false };

/** The pinned helm if it was built; the tests call this and never build it themselves. */
export function findHelm(): string | undefined {
  return findTool(HELM);
}

/** What to tell someone whose machine has no pinned helm yet. */
export function helmMissingMessage(): string {
  return (
    `helm (${HELM.module}) is not installed in ${toolCacheDir()}.\n` +
    'Build it once (needs Go; minutes the first time) with:\n' +
    '  npx tsx scripts/install-helm.ts\n' +
    '(`npm test` and .ci/run do this before jest runs.)'
  );
}

export async function findOrInstallHelm(): Promise<string | undefined> {
  return await findOrInstallTool(HELM);
}
