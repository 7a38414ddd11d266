import { Migration } from '@mikro-orm/migrations';
import { rollupFunctionsSql } from '../rollup-functions';

/**
 * The analytics rollup functions now have one definition each, in
 * src/db/sql/analytics-rollups.sql (src/db/rollup-functions.ts); this migration applies it.
 * Same definitions as before (Migration20261125000200_analytics, ..._sharded_rollups,
 * ..._execution_resets): only their text moved, so a database that ran those sees no change.
 * A later migration that changes a rollup function edits the file and applies it again.
 */
export class Migration20261204000100_rollup_functions extends Migration {
  /** The version of src/db/sql/analytics-rollups.sql this migration applies (src/db/rollup-functions.ts). */
  static readonly rollupFunctionsSha256 = '95ea6861cbbb439d32646ee94ac291949f0df9e7d3362dff1f30f4546b34a6b8';

  override async up(): Promise<void> {
    this.addSql(rollupFunctionsSql());
  }
}
