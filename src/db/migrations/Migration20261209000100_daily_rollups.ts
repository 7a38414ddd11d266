import { Migration } from '@mikro-orm/migrations';
import { rollupFunctionsSql } from '../rollup-functions';

/**
 * Two rollups for long periods and distinct customers (docs/analytics.md), kept by the same
 * deferred triggers in the transaction that writes the fact:
 * - `analytics_daily`: the counters of `analytics_hourly` (without the latency histogram) per
 *   UTC day, sharded the same way, so a year of workflow analytics reads days, not hours.
 * - `analytics_customer_returns`: per workflow, channel ('' = all channels), day and the
 *   customer's previous day (`since_day`, '-infinity' for none), how many customers were
 *   seen: the distinct customers of days [a, b) are the rows of those days with
 *   since_day < a, summed.
 * The index on analytics_customer_days finds a customer's days (its previous and next day).
 * Ends with a rebuild to fill the new tables: slow on a large database (release notes).
 */
export class Migration20261209000100_daily_rollups extends Migration {
  /** The version of src/db/sql/analytics-rollups.sql this migration applies (src/db/rollup-functions.ts). */
  static readonly rollupFunctionsSha256 = 'e1e3e13556f4f317bff67965ccf70d344f84eaf9e1465b719f8d9cf448678264';

  override async up(): Promise<void> {
    this.addSql(`
      create table analytics_daily (
        organization_id text not null,
        workflow_id text not null,
        day date not null,
        trigger_id text not null,
        channel text not null,
        shard smallint not null default 0,
        started integer not null default 0,
        succeeded integer not null default 0,
        failed integer not null default 0,
        cancelled integer not null default 0,
        timeout_errors integer not null default 0,
        api_errors integer not null default 0,
        validation_errors integer not null default 0,
        duration_sum_ms bigint not null default 0,
        messages_in integer not null default 0,
        messages_out integer not null default 0,
        rating_sum integer not null default 0,
        rating_count integer not null default 0,
        nps_promoters integer not null default 0,
        nps_detractors integer not null default 0,
        nps_count integer not null default 0,
        primary key (organization_id, workflow_id, day, trigger_id, channel, shard)
      );
      create index analytics_daily_org_day_idx on analytics_daily (organization_id, day);

      create table analytics_customer_returns (
        organization_id text not null,
        workflow_id text not null,
        channel text not null,
        day date not null,
        since_day date not null,
        shard smallint not null default 0,
        customers integer not null default 0,
        primary key (organization_id, workflow_id, channel, day, since_day, shard)
      );

      create index analytics_customer_days_customer_idx on analytics_customer_days (organization_id, workflow_id, customer_id, day) include (channel);
    `);
    this.addSql(rollupFunctionsSql());
    this.addSql('select analytics_rebuild();');
  }
}
