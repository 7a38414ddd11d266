import { Migration } from '@mikro-orm/migrations';

/**
 * Per-customer concurrency (docs/executions.md, "One conversation per customer"): an
 * execution that holds its workflow's slot for its customer carries `concurrency_key`
 * (`<workflow id>:<customer id>`), and at most one running execution holds a key. The
 * unique partial index is the rule itself: PostgreSQL decides it in the statement that
 * records the message (`insert … on conflict do nothing`), across API processes, and a row
 * leaves the index when its execution ends. Rows written before this migration have no key
 * and so are outside the rule, as are executions not started by a message.
 *
 * A skipped firing is a trigger execution of its own status, `skipped`.
 */
export class Migration20261211000100_execution_concurrency extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table executions add column concurrency_key text null;
      create unique index executions_concurrency_uniq on executions (concurrency_key) where status = 'running' and concurrency_key is not null;
      alter table trigger_executions drop constraint trigger_executions_status_check;
      alter table trigger_executions add constraint trigger_executions_status_check check (status in ('running', 'failed', 'skipped'));
    `);
  }
}
