import { Migration } from '@mikro-orm/migrations';

/**
 * Agent messages (`POST /v1/customers/{id}/messages`): a person's message is a transcript row
 * like any outbound message, marked `sender = 'agent'` (null: the usual sender, the customer
 * for inbound rows, the bot for outbound ones; no backfill of the existing rows). Its
 * delivery is a durable start (src/modules/starts/durable-start.ts): the row is committed
 * first, `temporal_started_at` stamps the confirmed start of its send workflow, and the
 * reconciler finds the unstamped ones through the partial index. `sent_at` / `send_error`
 * say how the send ended (the provider accepted it, or its final refusal).
 * Adding nullable columns rewrites nothing; the index only holds agent messages.
 */
export class Migration20261216000100_agent_messages extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table messages
        add column sender text null,
        add column temporal_started_at timestamptz null,
        add column sent_at timestamptz null,
        add column send_error jsonb null;
      create index messages_agent_unstarted_idx on messages (created_at) where sender = 'agent' and temporal_started_at is null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop index if exists messages_agent_unstarted_idx;
      alter table messages drop column sender, drop column temporal_started_at, drop column sent_at, drop column send_error;
    `);
  }
}
