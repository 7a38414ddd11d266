/**
 * Several replicas, proven (the small version of `npm run chaos -- --replicas 2`): 2 API
 * and 2 worker processes on this run's PostgreSQL database, Redis prefix and Temporal
 * queue; messages, api-trigger fires and schedule ticks through both APIs; one API and one
 * worker SIGKILLed mid-load and restarted. Every check of scripts/lib/replicated-drill.ts
 * must pass: each message handled exactly once, each fire and tick recorded once, no
 * execution started twice, every event delivered to both webhooks, the rate limit exact.
 *
 * Slow for a test (~30-40 s): six service processes start (four, then the two restarted),
 * each loading the service through tsx, and the drill waits for the backlog to drain.
 */
import { createTestApp, type TestApp } from '../helpers/app';
import { serviceEnv } from '../helpers/process';
import { runReplicatedDrill } from '../../scripts/lib/replicated-drill';

jest.setTimeout(240_000);

describe('two APIs and two workers, one of each killed mid-load', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('loses nothing, doubles nothing, and keeps limits exact across replicas', async () => {
    const lines: string[] = [];
    const t0 = Date.now();
    const report = await runReplicatedDrill({
      // A dead API's Idempotency-Key claim lapses in 2 s, so the resends wait little.
      env: { ...serviceEnv(t, { IDEMPOTENCY_LEASE_MS: '2000' }), REDIS_URL: t.config.REDIS_URL },
      createKey: async () => (await t.createKey('admin')).key,
      messages: 30,
      rate: 8,
      fires: 6,
      ticks: 3,
      rateLimit: 5,
      drainTimeoutMs: 60_000,
      log: (msg) => lines.push(`+${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`),
    });
    expect({ failed: report.checks.filter((c) => !c.ok).map((c) => c.what), log: report.checks.every((c) => c.ok) ? [] : lines }).toEqual({ failed: [], log: [] });
    expect(report.figures).toMatchObject({ messages: 30, fires: 6 });
    expect(report.figures.schedule_runs).toBeGreaterThanOrEqual(3);
    expect(report.checks.length).toBeGreaterThanOrEqual(10);
  });
});
