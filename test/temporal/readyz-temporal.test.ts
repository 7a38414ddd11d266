/**
 * Proves the `/readyz` Temporal probe: true for a live server, false fast for a dead one,
 * and it follows a server that goes down and comes back on the same port and SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { createTemporalClient, isTemporalReachable } from '../../src/temporal-client';
import { findOrInstallTemporalCli } from '../../scripts/lib/temporal-cli';
import { startTemporalDevServer } from '../../scripts/lib/temporal-dev-server';
import type { DevServer } from '../../scripts/lib/temporal-dev-server';
import { connectTestClient } from '../helpers/temporal';
import { freePort } from '../helpers/process';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(connection: Connection, expected: boolean, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reachable = await isTemporalReachable(connection);
    if (reachable === expected || Date.now() > deadline) return reachable;
    await sleep(200);
  }
}

test('reachable: the shared dev server', async () => {
  const temporal = await connectTestClient();
  try {
    expect(await isTemporalReachable(temporal.connection)).toBe(true);
  } finally {
    await temporal.close();
  }
});

test('unreachable: a closed port answers false within a couple of seconds', async () => {
  const port = await freePort();
  // Lazy: an eager connect would itself fail; /readyz must cope with a server that vanished.
  const connection = Connection.lazy({ address: `127.0.0.1:${port}` });
  try {
    const started = Date.now();
    expect(await isTemporalReachable(connection)).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_500);
  } finally {
    await connection.close();
  }
});

describe('a dedicated dev server that stops and restarts', () => {
  let dir: string;
  let server: DevServer | undefined;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'wfa-readyz-'));
  });
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('reachable while up, not while down, reachable again after restart', async () => {
    const executable = await findOrInstallTemporalCli();
    if (!executable) throw new Error('temporal CLI unavailable: this test needs a local `temporal` binary');
    const opts = { executable, dbFile: path.join(dir, 'temporal.db'), port: await freePort(), namespace: 'default' };

    server = await startTemporalDevServer(opts);
    const temporal = await createTemporalClient({ address: server.address, namespace: 'default' });
    try {
      expect(await isTemporalReachable(temporal.connection)).toBe(true);

      await server.stop();
      server = undefined;
      expect(await waitFor(temporal.connection, false, 5_000)).toBe(false);

      server = await startTemporalDevServer(opts);
      // The same connection recovers (capped reconnect backoff); no new client needed.
      expect(await waitFor(temporal.connection, true)).toBe(true);
    } finally {
      await temporal.close();
    }
  });
});
