import { Migration } from '@mikro-orm/migrations';

/**
 * `customer_handoffs`: a customer handed to a person (`POST /v1/customers/{id}/handoff`, or an
 * `ai_response` node with `fallback: "handoff"` below its confidence threshold). While a row is
 * active (`ended_at` null and `until` ahead), the customer's inbound messages are recorded but
 * start and resume nothing (docs/handoff.md). At most one active row per customer (the partial
 * unique index); ended rows stay as the history analytics counts (`handoff_rate`).
 */
export class Migration20261215000100_customer_handoffs extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table customer_handoffs (
        id text primary key,
        organization_id text not null references organizations (id),
        customer_id text not null references customers (id),
        channel text not null,
        reason text null,
        execution_id text null,
        started_at timestamptz not null default now(),
        until timestamptz not null,
        ended_at timestamptz null,
        end_reason text null check (end_reason in ('deleted', 'expired'))
      );
      create unique index customer_handoffs_active_key on customer_handoffs (customer_id) where ended_at is null;
      create index customer_handoffs_org_started_idx on customer_handoffs (organization_id, started_at);
    `);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists customer_handoffs;');
  }
}
