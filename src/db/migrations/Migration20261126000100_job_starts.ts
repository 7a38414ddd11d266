import { Migration } from '@mikro-orm/migrations';

/**
 * Exports, reports and replays start their Temporal workflow after the record commits
 * (src/modules/jobs/job-starter.ts): `temporal_started_at` stamps a confirmed start, and the
 * worker's reconciler starts active jobs where it is still null. Jobs recorded before this
 * migration were started inside their creating transaction, so they count as started.
 */
export class Migration20261126000100_job_starts extends Migration {
  override async up(): Promise<void> {
    for (const table of ['exports', 'reports', 'replays']) {
      this.addSql(`alter table ${table} add column temporal_started_at timestamptz`);
      this.addSql(`update ${table} set temporal_started_at = created_at`);
      this.addSql(`create index ${table}_unstarted_idx on ${table} (created_at) where temporal_started_at is null`);
    }
  }
}
