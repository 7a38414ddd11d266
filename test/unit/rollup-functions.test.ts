/**
 * The analytics rollup functions have one source, src/db/sql/analytics-rollups.sql: each
 * function is defined there once, the newest migration that applies it was written for
 * this version of it, and its latency histogram uses the TypeScript readers' bucket width.
 */
import { readFileSync } from 'node:fs';
import { migrationsList } from '../../src/db/migrations';
import { ROLLUP_FUNCTIONS_FILE, rollupFunctionNames, rollupFunctionsSha256 } from '../../src/db/rollup-functions';
import { bucketValue, LATENCY_RELATIVE_ERROR } from '../../src/modules/metrics/analytics-metrics';

const sql = readFileSync(ROLLUP_FUNCTIONS_FILE, 'utf8');

describe('rollup functions', () => {
  it('defines each function once, with create or replace', () => {
    for (const m of sql.matchAll(/^create (or replace )?function (\w+)\(/gm)) expect(m[1]).toBe('or replace ');
    // Written out or made by the shard template, each name once.
    const names = rollupFunctionNames(sql);
    expect(names).toEqual(expect.arrayContaining(['analytics_hourly_shard', 'analytics_add_execution']));
    expect(names.length).toBeGreaterThan(10);
    expect(new Set(names).size).toBe(names.length);
  });

  it('is the version the newest migration applying it was written for', () => {
    const appliers = migrationsList.filter((m) => typeof (m.class as { rollupFunctionsSha256?: unknown }).rollupFunctionsSha256 === 'string');
    const newest = appliers[appliers.length - 1];
    expect(newest).toBeDefined();
    // A failure here: the file changed without a new migration that applies it (docs/architecture-reports-analytics.md).
    expect((newest!.class as unknown as { rollupFunctionsSha256: string }).rollupFunctionsSha256).toBe(rollupFunctionsSha256());
  });

  it('buckets latencies with γ = (1 + LATENCY_RELATIVE_ERROR) / (1 − LATENCY_RELATIVE_ERROR), as the readers do', () => {
    const bucket = sql.slice(sql.indexOf('function analytics_latency_bucket('), sql.indexOf('function analytics_hist_add('));
    const gamma = /ln\((\d+(?:\.\d+)?) \/ (\d+(?:\.\d+)?)\)/.exec(bucket);
    expect(gamma).not.toBeNull();
    expect([Number(gamma![1]), Number(gamma![2])]).toEqual([1 + LATENCY_RELATIVE_ERROR, 1 - LATENCY_RELATIVE_ERROR]);
    // And the SQL bucket of a duration stands for a value within the bound of it.
    const g = Number(gamma![1]) / Number(gamma![2]);
    for (const ms of [1, 7, 250, 1_234, 98_765, 3_600_000]) {
      const b = 1 + Math.ceil(Math.log(ms) / Math.log(g));
      expect(Math.abs(bucketValue(b) - ms) / ms).toBeLessThanOrEqual(LATENCY_RELATIVE_ERROR + 1e-12);
    }
  });
});
