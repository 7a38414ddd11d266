import { Migration } from '@mikro-orm/migrations';

/**
 * A promoted execution (`on_conflict: "queue"`, Migration20261213000100_execution_queue) is
 * announced on the channel `wfa_promoted` (payload: its id), delivered at the commit of the
 * transaction that ended the running one: the worker starts it on Temporal at once
 * (executions/execution.reconciler.ts) instead of at the reconciler's next pass. The same
 * function otherwise; the pass still starts whatever a notification missed.
 */
export class Migration20261221000100_promote_notify extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create or replace function promote_queued_execution() returns trigger language plpgsql as $$
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
        perform pg_notify('wfa_promoted', next.id);
        return null;
      end $$;
    `);
  }
}
