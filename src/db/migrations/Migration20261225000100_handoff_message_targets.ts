import { Migration } from '@mikro-orm/migrations';

/**
 * A handoff that starts, ends or changes its `until` bumps its organization's
 * message-target version (Migration20261130000200), as a trigger or workflow change does.
 * The inbound message's plan now says whether the channel has a handoff in force
 * (inbound/message-targets.ts), so that the check of the message's customer
 * (inbound/handoff-intake.ts), one statement per message before, runs only where one may
 * be: a plan read before a handoff began is refused by the write (`WAT01`) and read again.
 */
export class Migration20261225000100_handoff_message_targets extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create constraint trigger customer_handoffs_message_targets_insert_delete after insert or delete on customer_handoffs
        deferrable initially deferred for each row execute function bump_message_target_version();
      create constraint trigger customer_handoffs_message_targets_update after update of until, ended_at on customer_handoffs
        deferrable initially deferred for each row
        when ((old.until, old.ended_at) is distinct from (new.until, new.ended_at))
        execute function bump_message_target_version();
    `);
  }
}
