import { Migration } from '@mikro-orm/migrations';
import { rollupFunctionsSql } from '../rollup-functions';

/**
 * The daily tier gets what /performance read from a year of hours (docs/analytics.md):
 * `started_by_hour` (starts per UTC hour of the day, subscripts 0–23: the peak clock hour and
 * the peak hour of day of whole days) and `latency_hist` (the latency histogram of the day's
 * finished executions, merged like the hourly one), kept by the same triggers in the same
 * transaction (analytics_add_daily). Filled from analytics_hourly (analytics_daily_hours_fill),
 * not by a full rebuild: the other columns do not change.
 */
export class Migration20261222000200_daily_hours extends Migration {
  /** The version of src/db/sql/analytics-rollups.sql this migration applies (src/db/rollup-functions.ts). */
  static readonly rollupFunctionsSha256 = 'a9914438a02bc156cb0dc3e512af04fa1eabd6a94a6a04a0cc4521a90e381424';

  override async up(): Promise<void> {
    this.addSql(`
      alter table analytics_daily add column started_by_hour integer[] not null default '{}',
                                  add column latency_hist integer[] not null default '{}';
    `);
    this.addSql(rollupFunctionsSql());
    this.addSql('select analytics_daily_hours_fill();');
  }
}
