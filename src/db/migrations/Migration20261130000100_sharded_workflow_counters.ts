import { Migration } from '@mikro-orm/migrations';

/**
 * A workflow's `execution_count` / `success_count` / `failure_count` move from its
 * `workflows` row into `workflow_counters`, where one workflow may have several rows
 * (shards), as the analytics rollups do (Migration20261129000100_sharded_rollups). Readers
 * sum the workflow's rows (`GET /v1/workflows/{id}` in one statement, the ORM through
 * formula properties).
 *
 * Why: the deferred counter trigger (Migration20261128000100_deferred_counters) made every
 * commit that starts or finishes an execution of a workflow update its one `workflows`
 * row, and hold that row until its commit record was flushed, so the inbound message's
 * write and every finish of one workflow committed one at a time. Under the executions
 * benchmark that wait was the largest of all (pg_stat_statements: 3.7 ms mean at the
 * message's commit, 4.6 ms at a finish's; docs/performance.md). Now a commit adds to the
 * first shard no other transaction holds (`for update skip locked`) and opens a new one
 * only when all are held (up to analytics_shard_limit(), with analytics_new_shard's
 * advisory lock against two opening the same one). A quiet workflow keeps one row, none
 * before its first execution.
 *
 * Same counts, committed with the rows that cause them. A single shard can go negative (a
 * finish moved out of `success` may be taken from another shard than the one it was added
 * to); a workflow's sum never is.
 */
export class Migration20261130000100_sharded_workflow_counters extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table workflow_counters (
        workflow_id text not null references workflows(id),
        shard smallint not null,
        execution_count integer not null default 0,
        success_count integer not null default 0,
        failure_count integer not null default 0,
        primary key (workflow_id, shard)
      );
      insert into workflow_counters (workflow_id, shard, execution_count, success_count, failure_count)
        select id, 0, execution_count, success_count, failure_count from workflows
         where execution_count <> 0 or success_count <> 0 or failure_count <> 0;
      alter table workflows drop column execution_count, drop column success_count, drop column failure_count;

      -- The shard of workflow_counters this transaction adds to (as analytics_hourly_shard).
      create function workflow_counter_shard(w text) returns smallint language plpgsql as $$
      declare
        s smallint;
        taken smallint[];
      begin
        select shard into s from workflow_counters where workflow_id = w order by shard limit 1 for update skip locked;
        if found then return s; end if;
        select array_agg(shard) into taken from workflow_counters where workflow_id = w;
        return analytics_new_shard(concat_ws('/', 'workflow-counters', w), taken);
      end $$;

      create or replace function counters_on_execution() returns trigger language plpgsql as $$
      declare
        was_success integer := case when tg_op = 'UPDATE' then (old.status = 'success')::int else 0 end;
        was_failed integer := case when tg_op = 'UPDATE' then (old.status = 'failed')::int else 0 end;
      begin
        insert into workflow_counters as c (workflow_id, shard, execution_count, success_count, failure_count)
        values (new.workflow_id, workflow_counter_shard(new.workflow_id), (tg_op = 'INSERT')::int,
                (new.status = 'success')::int - was_success, (new.status = 'failed')::int - was_failed)
        on conflict (workflow_id, shard) do update set
          execution_count = c.execution_count + excluded.execution_count,
          success_count = c.success_count + excluded.success_count,
          failure_count = c.failure_count + excluded.failure_count;
        return null;
      end $$;
    `);
  }
}
