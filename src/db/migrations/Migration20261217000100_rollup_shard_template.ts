import { Migration } from '@mikro-orm/migrations';
import { rollupFunctionsSql } from '../rollup-functions';

/**
 * Applies src/db/sql/analytics-rollups.sql after a rewrite of its text, not of what the
 * functions do: the shard functions of analytics_hourly, analytics_node_hourly and
 * analytics_daily are now written by one template in the file (their definitions are the
 * same as before), analytics_count_returning picks its shard through a fourth one,
 * analytics_returns_shard, with the statements it ran inline, and analytics_add_execution
 * takes its counters from analytics_execution_daily (the same values). No rollup row changes,
 * so no rebuild.
 */
export class Migration20261217000100_rollup_shard_template extends Migration {
  /** The version of src/db/sql/analytics-rollups.sql this migration applies (src/db/rollup-functions.ts). */
  static readonly rollupFunctionsSha256 = 'e12660ed304af3aecf30aad9380b9e7fda5990d49a2650f11c91a4482897a431';

  override async up(): Promise<void> {
    this.addSql(rollupFunctionsSql());
  }
}
