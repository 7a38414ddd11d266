import { Migration } from '@mikro-orm/migrations';

/**
 * The reconciler's claim on an unconfirmed durable start (starts/durable-start.ts): a
 * lease instead of a row lock. A pass claims one row at a time in a statement of its own
 * (committed at once), calls Temporal with no transaction open, then stamps
 * `temporal_started_at`; another process skips the rows whose lease has not expired. A
 * process that dies holding a claim only delays that row until its lease runs out.
 */
export class Migration20261218000100_start_claims extends Migration {
  override async up(): Promise<void> {
    for (const table of ['executions', 'exports', 'reports', 'replays', 'dry_runs', 'webhook_recoveries', 'messages']) {
      this.addSql(`alter table ${table} add column start_claimed_until timestamptz null;`);
    }
  }
}
