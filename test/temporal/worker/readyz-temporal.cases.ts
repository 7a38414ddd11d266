/**
 * Proves the `/readyz` Temporal probe: true for a live server, false (not a hang) for a dead one,
 * and the app's `/readyz` follows a server that goes down and comes back on the same port
 * and SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { isTemporalReachable } from '../../../src/temporal-client';
import { findOrInstallTemporalCli } from '../../../scripts/lib/temporal-cli';
import { startTemporalDevServer } from '../../../scripts/lib/temporal-dev-server';
import type { DevServer } from '../../../scripts/lib/temporal-dev-server';
import { createTestApp } from '../../helpers/app';
import { connectTestClient } from '../../helpers/temporal';
import { freePort } from '../../helpers/process';

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

// No duration asserted (timings belong in benchmarks): the probe answering at all, within
// the test's own timeout, is what shows it does not hang on a dead server.
test('unreachable: a closed port answers false rather than hanging', async () => {
  const port = await freePort();
  // Lazy: an eager connect would itself fail; /readyz must cope with a server that vanished.
  const connection = Connection.lazy({ address: `127.0.0.1:${port}` });
  try {
    expect(await isTemporalReachable(connection)).toBe(false);
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

  test('/readyz: ok while up, 503 temporal unavailable while down, ok again after restart', async () => {
    const executable = await findOrInstallTemporalCli();
    if (!executable) throw new Error('temporal CLI unavailable: this test needs a local `temporal` binary');
    const opts = { executable, dbFile: path.join(dir, 'temporal.db'), port: await freePort(), namespace: 'default' };

    server = await startTemporalDevServer(opts);
    const app = await createTestApp({ TEMPORAL_ADDRESS: server.address });
    const readyz = async () => (await app.request.get('/readyz')).body as { status: string; checks: Record<string, string> };
    const readyzUntil = async (temporal: 'ok' | 'unavailable', timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const body = await readyz();
        if (body.checks.temporal === temporal || Date.now() > deadline) return body;
        await sleep(200);
      }
    };
    try {
      expect(await isTemporalReachable(app.services.temporal.connection)).toBe(true);
      expect(await readyz()).toEqual({ status: 'ok', checks: { postgres: 'ok', redis: 'ok', temporal: 'ok' } });

      await server.stop();
      server = undefined;
      expect(await readyzUntil('unavailable', 5_000)).toEqual({
        status: 'unavailable',
        checks: { postgres: 'ok', redis: 'ok', temporal: 'unavailable' },
      });
      expect((await app.request.get('/readyz')).status).toBe(503);

      server = await startTemporalDevServer(opts);
      // The same connection recovers (capped reconnect backoff); no new client needed.
      expect((await readyzUntil('ok', 15_000)).status).toBe('ok');
      expect((await app.request.get('/readyz')).status).toBe(200);
    } finally {
      await app.close();
    }
  });
});
