import { Migration } from '@mikro-orm/migrations';

/**
 * The cancel's dual write: `executions.temporal_cancelled_at` is stamped once Temporal took
 * the cancel of a `cancelled` execution's run (or answered that the run is gone). The
 * reconciler re-sends the cancels still unstamped; the partial index keeps that scan to
 * the few rows pending.
 *
 * Backfill: a row cancelled more than 8 days ago needs no re-send. Its run has closed:
 * a form waits at most 7 days, and the next activity after that finds the row cancelled
 * and stops the run. More recent rows stay null, so the reconciler checks them once.
 */
export class Migration20261124000100_temporal_cancels extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table executions add column temporal_cancelled_at timestamptz;
      update executions set temporal_cancelled_at = completed_at
       where status = 'cancelled' and completed_at < now() - interval '8 days';
      create index executions_uncancelled_idx on executions (completed_at) where status = 'cancelled' and temporal_cancelled_at is null;
    `);
  }
}
