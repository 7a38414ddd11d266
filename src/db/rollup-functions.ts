/**
 * Owns the one source of the analytics rollup functions: src/db/sql/analytics-rollups.sql.
 * A migration that changes a rollup function edits that file and applies it whole
 * (`this.addSql(rollupFunctionsSql())`), as Migration20261204000100_rollup_functions does;
 * older migrations keep the definitions an existing database ran (docs/architecture-reports-analytics.md).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const ROLLUP_FUNCTIONS_FILE = path.join(__dirname, 'sql', 'analytics-rollups.sql');

/**
 * The file as it is now, ready to apply. Function bodies are not checked at creation
 * (check_function_bodies off, restored after): on a fresh database an earlier re-applying
 * migration runs today's file, whose bodies may use columns a later migration adds. Nothing
 * calls the functions before then (migrations write no facts), so that is safe.
 */
export function rollupFunctionsSql(): string {
  return `set local check_function_bodies = off;\n${readFileSync(ROLLUP_FUNCTIONS_FILE, 'utf8')}\nset local check_function_bodies = on;`;
}

/**
 * The file's fingerprint. A migration that applies the file records the fingerprint it was
 * written for (`static rollupFunctionsSha256`); a unit test (test/unit/rollup-functions.test.ts)
 * fails when the newest such migration's differs from the file's, so a changed file comes with
 * the migration that applies it to databases that already ran the older ones.
 */
export function rollupFunctionsSha256(): string {
  return createHash('sha256').update(readFileSync(ROLLUP_FUNCTIONS_FILE)).digest('hex');
}

/**
 * The functions the file defines: those written out (`create or replace function name(`) and
 * those its shard template writes (a row of the template starts with `('name',`).
 */
export function rollupFunctionNames(sql = readFileSync(ROLLUP_FUNCTIONS_FILE, 'utf8')): string[] {
  const written = [...sql.matchAll(/^create or replace function (\w+)\(/gm)].map((m) => m[1]!);
  const templated = [...sql.matchAll(/^\s*\('(analytics_\w+)',/gm)].map((m) => m[1]!);
  return [...written, ...templated];
}
