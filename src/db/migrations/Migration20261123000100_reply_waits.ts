import { Migration } from '@mikro-orm/migrations';

/**
 * Form replies as claims: a form prompt opens a wait (`executions.waiting_key`, the
 * prompt's dedupe key) before it is sent; the first inbound message of that customer and
 * channel claims it (`messages.reply_to_wait`), the form's timeout closes it otherwise.
 * The unique index makes "one reply per prompt" hold even against a bug in the locking.
 */
export class Migration20261123000100_reply_waits extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table executions add column waiting_key text;
      alter table messages add column reply_to_wait text;
      create unique index messages_reply_to_wait_uniq on messages (reply_to_wait) where reply_to_wait is not null;
    `);
  }
}
