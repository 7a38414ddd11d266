import { Migration } from '@mikro-orm/migrations';

/**
 * `voice_calls`: one row per phone call received on a `twilio_voice` connection, keyed by
 * Twilio's CallSid. It ties the call's requests to its execution (null: no voice workflow
 * matched) and keeps where the conversation stands between two requests:
 * - `answered`: how many of the execution's outbound messages the caller has been sent as
 *   TwiML (the cursor of the next answer, so nothing is said twice or skipped);
 * - `pending_reply`: the caller's last reply ({message_id, text}) until an answer after it
 *   is rendered, so a redirected request carries it again (idempotent in the workflow);
 * - `last_prompt`: the last `<Gather>` rendered, said again when Twilio comes back with
 *   no input.
 * `ended_at` and `end_status` come from Twilio's call status callback.
 */
export class Migration20261210000100_voice_calls extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table voice_calls (
        call_sid text primary key,
        organization_id text not null references organizations (id),
        connection_id text not null references channel_connections (id),
        execution_id text null references executions (id),
        customer_id text null,
        from_number text not null,
        to_number text not null,
        answered integer not null default 0,
        pending_reply jsonb null,
        last_prompt jsonb null,
        started_at timestamptz not null default now(),
        ended_at timestamptz null,
        end_status text null
      );
      create index voice_calls_execution_idx on voice_calls (execution_id) where execution_id is not null;
      create index voice_calls_org_idx on voice_calls (organization_id, started_at desc);
    `);
  }

  override async down(): Promise<void> {
    this.addSql('drop table if exists voice_calls;');
  }
}
