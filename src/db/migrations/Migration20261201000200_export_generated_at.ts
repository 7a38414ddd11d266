import { Migration } from '@mikro-orm/migrations';

/**
 * When an export read its data (the start of its one database snapshot). The NDJSON
 * metadata line is written before the rows, so this instant is known before the file is
 * done; `completed_at` stays the moment the file was stored. Null for older exports, whose
 * metadata falls back to `completed_at`.
 */
export class Migration20261201000200_export_generated_at extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table exports add column generated_at timestamptz;`);
  }
}
