import { Migration } from '@mikro-orm/migrations';

/**
 * The workflow's `execution_count` / `success_count` / `failure_count` and the trigger's
 * `execution_count` / `last_triggered` are kept by deferred constraint triggers, like the
 * analytics rollups (Migration20261127000100_deferred_rollups), instead of UPDATEs in the
 * middle of the transactions that start and finish executions.
 *
 * Why: every start and every finish of a workflow's executions updated its one `workflows`
 * row, and held that row lock from the UPDATE to the commit, across every later round
 * trip of the transaction: under load, 64 % of the busy database backends were queued on
 * it (docs/performance.md). Deferred, the row is locked only while the commit runs the
 * triggers, after every other lock of the transaction and in the same order everywhere
 * (constraint triggers of one event fire in name order: `executions_analytics_*`, then
 * `executions_counters_*`, so rollup row before counter row, as a finishing execution does).
 *
 * Same counts, same atomicity: the counters commit with the rows that cause them, and a
 * deferred row trigger sees the row as it was at its event. A firing that failed (its
 * workflow was not active) still counts for its trigger, as before.
 */
export class Migration20261128000100_deferred_counters extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create function counters_on_execution() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          update workflows
             set execution_count = execution_count + 1,
                 success_count = success_count + (new.status = 'success')::int,
                 failure_count = failure_count + (new.status = 'failed')::int
           where id = new.workflow_id;
        else
          update workflows
             set success_count = success_count + (new.status = 'success')::int - (old.status = 'success')::int,
                 failure_count = failure_count + (new.status = 'failed')::int - (old.status = 'failed')::int
           where id = new.workflow_id;
        end if;
        return null;
      end $$;
      create constraint trigger executions_counters_insert after insert on executions
        deferrable initially deferred for each row execute function counters_on_execution();
      create constraint trigger executions_counters_update after update of status on executions
        deferrable initially deferred for each row
        when (old.status is distinct from new.status and (old.status in ('success', 'failed') or new.status in ('success', 'failed')))
        execute function counters_on_execution();

      create function counters_on_trigger_execution() returns trigger language plpgsql as $$
      begin
        update triggers
           set execution_count = execution_count + 1,
               last_triggered = greatest(coalesce(last_triggered, new.triggered_at), new.triggered_at)
         where id = new.trigger_id;
        return null;
      end $$;
      create constraint trigger trigger_executions_counters_insert after insert on trigger_executions
        deferrable initially deferred for each row execute function counters_on_trigger_execution();
    `);
  }
}
