import { Migration } from '@mikro-orm/migrations';

/**
 * The open form waits are indexed in the order the inbound message's claim reads them
 * (`claimOpenWaitCtes`: a customer's newest open wait on a channel), so that index is the
 * claim's whole plan, whatever plan is cached.
 *
 * Why: the claim is part of a named statement that each connection plans once. The old
 * index (organization, customer, channel) gave no order, and a plan made while the table was
 * small read the organization's executions newest first instead, filtering for the
 * customer: while one organization flooded, every one of its messages walked its running
 * executions (about 1,500 rows, 0.4–0.5 ms of every inbound write; docs/performance.md).
 */
export class Migration20261226000100_open_wait_index extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create index executions_open_wait_idx on executions (organization_id, customer_id, channel, started_at desc)
        where status = 'running' and waiting_node_id is not null;
      drop index executions_waiting_idx;
    `);
  }
}
