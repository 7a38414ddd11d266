import { Migration } from '@mikro-orm/migrations';

/** JWT replay protection becomes a per-application option, off by default (a JWT is a bearer credential until its exp). */
export class Migration20261201000100_application_require_jti extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table applications add column require_jti boolean not null default false');
  }
}
