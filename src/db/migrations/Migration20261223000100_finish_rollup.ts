import { Migration } from '@mikro-orm/migrations';
import { rollupFunctionsSql } from '../rollup-functions';

/**
 * An execution's finish writes its rollups in one upsert per tier (analytics_change_execution):
 * the difference of its counters into its hour and its day, instead of taking the running row
 * out of the hour and putting the finished one in (two upserts, two shard lookups). Function
 * bodies only: no table changes and nothing to refill.
 */
export class Migration20261223000100_finish_rollup extends Migration {
  /** The version of src/db/sql/analytics-rollups.sql this migration applies (src/db/rollup-functions.ts). */
  static readonly rollupFunctionsSha256 = '66f4cf6335d427578724bc39b36bb973fd8950d7a7d42a49f3d706e53f48dafc';

  override async up(): Promise<void> {
    this.addSql(rollupFunctionsSql());
  }
}
