/**
 * Several replicas, proven (the small version of `npm run chaos -- --replicas 2`): 2 API
 * and 2 worker processes on this run's PostgreSQL database, Redis prefix and Temporal
 * queue; messages, api-trigger fires and schedule ticks through both APIs; one API and one
 * worker SIGKILLed mid-load and restarted, the API killed once more between a request's
 * commit and storing its Idempotency-Key answer (the first it takes, a message or a fire). Every check
 * of scripts/lib/replicated-drill.ts must pass: each message handled exactly once, each fire
 * and tick recorded once (doubled 0), no
 * execution started twice, every event delivered to both webhooks, the rate limit exact.
 *
 * Slow for a test (about 35 s on an idle 2-core machine, 55 s on a loaded one): seven
 * service processes start, each loading the service through tsx (four, then the killed API
 * and worker, then that API once more after its failpoint), and the drill waits for the
 * backlog to drain and for every webhook delivery.
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
      // The first idempotent request the restarted API takes: the count of messages stays exact.
      cutOffFailpoint: 'idempotency.before_store',
      log: (msg) => lines.push(`+${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`),
    });
    expect({ failed: report.checks.filter((c) => !c.ok).map((c) => c.what), log: report.checks.every((c) => c.ok) ? [] : lines }).toEqual({ failed: [], log: [] });
    // 30 messages and the one whose API died after its commit.
    expect(report.figures).toMatchObject({ messages: 31, fires: 6, ticks_triggered: 3, claims_cut_off: 1 });
    expect(report.figures.schedule_runs).toBeGreaterThanOrEqual(3);
    expect(report.checks.length).toBeGreaterThanOrEqual(10);
  });
});
