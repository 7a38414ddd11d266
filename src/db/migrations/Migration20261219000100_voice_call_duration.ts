import { Migration } from '@mikro-orm/migrations';

/**
 * `voice_calls.duration_seconds`: Twilio's `CallDuration` from the status callback that
 * ended the call (seconds; sent with `completed`, absent otherwise). Engagement analytics
 * count a call as one session and take this as its duration (docs/analytics.md).
 */
export class Migration20261219000100_voice_call_duration extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table voice_calls add column duration_seconds integer null check (duration_seconds >= 0);');
  }

  override async down(): Promise<void> {
    this.addSql('alter table voice_calls drop column if exists duration_seconds;');
  }
}
