import { Migration } from '@mikro-orm/migrations';

/**
 * Disabling after persistent failure: why (`disabled_reason`: gone | persistent_failure)
 * and when delivery switched a webhook off, and from when its failures count again after
 * a client re-activated it. `deactivated_reason` is no longer written (its 410s become
 * `gone`); it stays for workers of the previous version during a rolling deploy. A
 * partial index finds a webhook's last success without reading its failures.
 */
export class Migration20261202000200_webhook_disabling extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table webhooks
        add column disabled_reason text null,
        add column disabled_at timestamptz null,
        add column failures_counted_from timestamptz null;
      update webhooks set disabled_reason = 'gone', disabled_at = updated_at where deactivated_reason is not null and not active;
      create index webhook_logs_success_idx on webhook_logs (webhook_id, delivered_at desc) where status = 'success';
    `);
  }
}
