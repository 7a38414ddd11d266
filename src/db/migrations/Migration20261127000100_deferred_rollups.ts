import { Migration } from '@mikro-orm/migrations';

/**
 * The analytics rollup triggers (Migration20261125000200_analytics) become constraint
 * triggers DEFERRABLE INITIALLY DEFERRED: they run at COMMIT instead of at each statement.
 *
 * Why: every inbound message of an organization and channel adds to the same
 * `analytics_hourly` row, and every execution start and finish of a workflow to another;
 * fired immediately, the trigger took those rows' locks at the first statement and held
 * them through every later round trip of the transaction, so concurrent `POST /v1/messages`
 * queued behind each other, and a message (workflow counter row, then rollup row) and an
 * execution finishing (rollup row, then workflow counter row) deadlocked, each deadlock
 * costing `deadlock_timeout` (1 s) to everyone queued behind it (docs/performance.md).
 * Deferred, the rollup rows are locked only for the commit itself, after every other lock
 * of the transaction, always in the same order.
 *
 * Same results: a deferred row trigger still gets the row as it was at its event, events
 * fire in their order, and the rollups are updated in the same transaction (atomic with
 * the facts). Bulk loads with `session_replication_role = replica` skip them as before.
 */
export class Migration20261127000100_deferred_rollups extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      drop trigger executions_analytics_insert on executions;
      drop trigger executions_analytics_update on executions;
      drop trigger messages_analytics_insert on messages;
      drop trigger messages_analytics_update on messages;
      drop trigger execution_steps_analytics on execution_steps;

      create constraint trigger executions_analytics_insert after insert on executions
        deferrable initially deferred for each row execute function analytics_on_execution();
      create constraint trigger executions_analytics_update after update of status, duration_ms, error_type on executions
        deferrable initially deferred for each row
        when (old.status is distinct from new.status or old.duration_ms is distinct from new.duration_ms or old.error_type is distinct from new.error_type)
        execute function analytics_on_execution();
      create constraint trigger messages_analytics_insert after insert on messages
        deferrable initially deferred for each row execute function analytics_on_message();
      create constraint trigger messages_analytics_update after update of execution_id on messages
        deferrable initially deferred for each row
        when (old.execution_id is distinct from new.execution_id) execute function analytics_on_message();
      create constraint trigger execution_steps_analytics after insert on execution_steps
        deferrable initially deferred for each row execute function analytics_on_step();
    `);
  }
}
