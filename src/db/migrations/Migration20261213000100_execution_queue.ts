import { Migration } from '@mikro-orm/migrations';

/**
 * Per-customer concurrency, `on_conflict: "queue"` and `"replace"` (docs/executions.md,
 * "One conversation per customer"):
 *
 * - an execution that waits for its slot is a row of status `queued` with `queued_at`
 *   (arrival order); it holds no place in `executions_concurrency_uniq` (running rows only);
 * - when a running execution that holds a slot ends (any status change away from
 *   `running`, wherever it is written: completion, failure, timeout, cancel), the trigger
 *   `executions_queue_promote` promotes the oldest queued execution of the same slot to
 *   `running` in the same transaction, with its `workflow.started` event; the durable-start
 *   reconciler (or the finisher's own dispatch) then starts it on Temporal. The trigger first
 *   locks the customer's row, which every message statement of that customer updates, so a
 *   message queued by a statement that is still in flight is seen (not orphaned);
 * - `concurrency_retry()` lets a message statement undo itself with a serialization
 *   failure when its snapshot missed a newer holder (a `replace` that found nothing to
 *   replace yet could not start): the caller writes again.
 */
export class Migration20261213000100_execution_queue extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table executions drop constraint executions_status_check;
      alter table executions add constraint executions_status_check check (status in ('queued', 'running', 'success', 'failed', 'cancelled'));
      alter table executions add column queued_at timestamptz null;
      create index executions_queue_idx on executions (concurrency_key, queued_at, id) where status = 'queued';

      create function promote_queued_execution() returns trigger language plpgsql as $$
      declare
        next executions;
      begin
        -- Every message statement of the customer updates this row first: waiting here means a
        -- statement that queued behind the ending execution has committed, and is seen below
        -- (each statement of this function reads with a fresh snapshot).
        perform 1 from customers where id = old.customer_id for no key update;
        select * into next from executions
         where concurrency_key = old.concurrency_key and status = 'queued'
         order by queued_at, id limit 1 for update skip locked;
        if not found then return null; end if;
        update executions set status = 'running', started_at = clock_timestamp() where id = next.id and status = 'queued'
          returning * into next;
        insert into events (id, organization_id, type, data, created_at)
        values ('evt_' || substr(md5(random()::text || clock_timestamp()::text || next.id), 1, 20), next.organization_id, 'workflow.started',
                jsonb_build_object('workflow_id', next.workflow_id, 'execution_id', next.id, 'status', 'running', 'duration_ms', 0,
                                   'customer_id', next.customer_id, 'channel', next.channel),
                next.started_at);
        return null;
      end $$;

      create trigger executions_queue_promote after update of status on executions for each row
        when (old.status = 'running' and new.status <> 'running' and old.concurrency_key is not null)
        execute function promote_queued_execution();

      create function concurrency_retry() returns boolean language plpgsql as $$
      begin
        raise exception 'a newer execution holds the concurrency slot; write again' using errcode = '40001';
      end $$;
    `);
  }
}
