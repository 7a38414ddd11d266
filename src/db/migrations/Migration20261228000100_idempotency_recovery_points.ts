import { Migration } from '@mikro-orm/migrations';

/**
 * An `Idempotency-Key` claim's recovery point (src/http/idempotency.ts): the ids of the
 * work a request committed (`{"message_id": ...}`, `{"trigger_execution_id": ...}`), written
 * into the claim's row by the work's own transaction. A retry whose first try died after
 * that commit finds the point and answers from it instead of running the work again; a
 * claim with a point never lapses to another request.
 *
 * `idempotency_claim_lost()` fails a work's statement whose claim was taken over (its lease
 * lapsed): the work rolls back and the request answers 409 IDEMPOTENCY_KEY_IN_USE, so only
 * the holder's work can commit.
 */
export class Migration20261228000100_idempotency_recovery_points extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table idempotency_keys add column recovery_point jsonb;
      create function idempotency_claim_lost() returns boolean language plpgsql as $$
      begin
        raise exception 'the Idempotency-Key claim was taken over by another request' using errcode = 'WAI02';
      end $$;
    `);
  }
}
