import { Migration } from '@mikro-orm/migrations';
import { rollupFunctionsSql } from '../rollup-functions';

/**
 * An inbound message and the execution it starts, written by one statement, are counted in
 * the hourly and daily rollups by the execution's upserts (analytics_on_execution), instead
 * of one more upsert per tier, each with its shard lookup and a read of the execution, for
 * the message (src/db/sql/analytics-rollups.sql, `analytics_inbound_rolled_with`). The
 * inbound write marks such a message (`rollup_with_execution`); a message linked to its
 * execution later (a debounced burst's) is counted on its own, as before. Same sums.
 *
 * analytics_add_execution takes the messages counted with it (a fourth argument with a
 * default): the three-argument function goes first, or every call would be ambiguous.
 */
export class Migration20261227000100_inbound_rollup extends Migration {
  /** The version of src/db/sql/analytics-rollups.sql this migration applies (src/db/rollup-functions.ts). */
  static readonly rollupFunctionsSha256 = '09724b35ae148f3e9f89becd8d3903ac69483b5682d1f44f65bd893af459d584';

  override async up(): Promise<void> {
    this.addSql(`
      alter table messages add column rollup_with_execution boolean not null default false;
      drop function if exists analytics_add_execution(executions, integer, boolean);
    `);
    this.addSql(rollupFunctionsSql());
  }
}
