import { Migration } from '@mikro-orm/migrations';

/**
 * Secret rotation with overlap: the secret a rotation replaced keeps signing (beside the
 * new one) until `previous_secret_expires_at`.
 */
export class Migration20261202000100_webhook_secret_rotation extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table webhooks add column previous_secret text null, add column previous_secret_expires_at timestamptz null');
  }
}
