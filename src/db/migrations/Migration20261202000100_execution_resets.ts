import { Migration } from '@mikro-orm/migrations';

/**
 * Executions survive a Temporal reset (docs/operators.md). `temporal_run_id`: the run that
 * reopened the execution after a reset (null until one did); `reset_from_run_id`: the run it
 * was reset from. A reset run reopens a failed execution and deletes its failed steps (the
 * new run records them anew): deleting a step now takes it out of the node rollups, as
 * inserting it added it (analytics_on_step), so a node re-run after a reset counts once.
 */
export class Migration20261202000100_execution_resets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table executions add column temporal_run_id text, add column reset_from_run_id text;

      create function analytics_on_step_delete() returns trigger language plpgsql as $$
      declare
        e executions;
      begin
        select * into e from executions where id = old.execution_id;
        if not found then return null; end if;
        update analytics_node_hourly a
           set steps = a.steps - 1, failed_steps = a.failed_steps - (old.status = 'failed')::int,
               duration_sum_ms = a.duration_sum_ms - coalesce(old.duration_ms, 0)
         where a.ctid = (select ctid from analytics_node_hourly
                          where organization_id = old.organization_id and workflow_id = e.workflow_id
                            and hour = date_trunc('hour', e.started_at, 'UTC') and node_id = old.node_id and type = old.type
                          order by shard limit 1);
        return null;
      end $$;
      create constraint trigger execution_steps_analytics_delete after delete on execution_steps
        deferrable initially deferred for each row execute function analytics_on_step_delete();
    `);
  }
}
