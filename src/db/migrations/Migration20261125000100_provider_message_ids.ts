import { Migration } from '@mikro-orm/migrations';

/**
 * Inbound messages carry the provider's own message id when the client sends one: channel
 * providers redeliver their webhooks, and a redelivery must not start a second
 * conversation. Unique per organization and channel (two providers may reuse ids).
 */
export class Migration20261125000100_provider_message_ids extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table messages add column provider_message_id text;
      create unique index messages_provider_message_id_key on messages (organization_id, channel, provider_message_id)
        where provider_message_id is not null;
    `);
  }
}
