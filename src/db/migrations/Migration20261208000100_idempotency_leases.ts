import { Migration } from '@mikro-orm/migrations';

/**
 * An `Idempotency-Key` claim is a lease (src/http/idempotency.ts): `locked_until`, renewed
 * while its request runs, lets a claim cut off by a crashed API expire within seconds
 * instead of blocking the key for 24 h; `claim_token` says which request holds it, so a
 * request whose lease was taken over cannot store its response over the new holder's.
 * Rows of requests in flight during the deploy get a short lease by default.
 */
export class Migration20261208000100_idempotency_leases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table idempotency_keys
        add column locked_until timestamptz not null default now() + interval '30 seconds',
        add column claim_token text;
    `);
  }
}
