/**
 * Owns `Idempotency-Key` on POSTs, the way Stripe does it: the first request with a key
 * claims it (a row in PostgreSQL, so a replay survives restarts); its response is stored
 * and replayed for 24 h to a retry with the same body. The same key with another body is
 * 409 IDEMPOTENCY_KEY_REUSED; a retry while the first is still running is 409
 * IDEMPOTENCY_KEY_IN_USE. Requests that fail validation or end in a 5xx or 429 store
 * nothing, so the client may retry them with the same key.
 *
 * Nothing is done twice. A request whose work has effects records a recovery point (its
 * work's own ids: `{"message_id": ...}`) in the claim's row IN THE WORK'S TRANSACTION
 * (`HeldClaim.recordIn`, or `recoveryPointCteSql` inside the work's one statement), the
 * "atomic phase" of Stripe's design. A retry then finds one of three things: the stored
 * answer (a replay), a recovery point (the work committed but its answer was never stored:
 * the API died in between; the route's `resume` answers from the point, nothing is run
 * again), or neither (the work never committed: it runs). The point is written only while
 * the claim is still this request's (`claim_token`): a work whose claim was taken over
 * rolls back (409 IDEMPOTENCY_KEY_IN_USE), so only one work per key can commit.
 *
 * The claim is a lease (`locked_until`), renewed while the request runs: an API that dies
 * before its work committed leaves a claim without a point that expires within
 * IDEMPOTENCY_LEASE_MS, and the client's retry (on any replica) then runs the request,
 * instead of 409 for the whole day. A claim with a point never lapses: it is resumed.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { SqlRunner } from '../db/hot-query';
import type { Orm } from '../db/orm';
import { AppError } from './errors';

export const IDEMPOTENCY_TTL_HOURS = 24;
const MAX_KEY_LENGTH = 255;

export interface StoredResponse {
  status: number;
  body: unknown;
}

/** A request's recovery point: the ids of the work it committed, by name (`message_id`, `replay_id`, ...). */
export type RecoveryPoint = Record<string, string>;

export type Claim =
  | { kind: 'claimed'; held: HeldClaim }
  | { kind: 'replay'; response: StoredResponse }
  /** The first try's work committed this point, and its answer was never stored. */
  | { kind: 'resume'; point: RecoveryPoint };

/** SQLSTATE of `idempotency_claim_lost()` (Migration20261228000100_idempotency_recovery_points). */
export const CLAIM_LOST_SQLSTATE = 'WAI02';

export const keyInUse = () =>
  new AppError(409, 'IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed', {
    field: 'Idempotency-Key',
    retryAfter: 1,
    headers: { 'Retry-After': '1' },
  });

/**
 * The CTE body that records a recovery point inside a work's own statement (one statement,
 * no transaction around it: the inbound message's write). Each argument is SQL (placeholders
 * or expressions); `when`: whether the statement did its work. The statement must also
 * select `claimLostCheckSql(cte, when)`, which fails it when the claim was taken over.
 */
export const recoveryPointCteSql = (p: { organizationId: string; key: string; token: string; point: string; when: string }) =>
  `update idempotency_keys set recovery_point = ${p.point}
    where (${p.when}) and organization_id = ${p.organizationId} and key = ${p.key} and claim_token = ${p.token} and status_code is null
   returning 1`;

export const claimLostCheckSql = (cte: string, when: string) => `case when (${when}) and not exists (select 1 from ${cte}) then idempotency_claim_lost() end`;

/** How often a held claim's lease is renewed, as a share of the lease: two renewals may fail before it lapses. */
const RENEWALS_PER_LEASE = 3;

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${JSON.stringify(body ?? null)}`).digest('hex');
}

/**
 * A claim this request holds: its lease is renewed until the request stores its response
 * (`complete`) or gives the key back (`release`). Both act only while the claim is still
 * this request's (`claim_token`): one whose lease lapsed and was taken over stores nothing.
 */
export class HeldClaim {
  private readonly renewal: NodeJS.Timeout;

  constructor(
    private readonly store: IdempotencyStore,
    readonly organizationId: string,
    readonly key: string,
    readonly token: string,
  ) {
    this.renewal = setInterval(() => void store.renew(this).catch(() => undefined), store.leaseMs / RENEWALS_PER_LEASE);
    this.renewal.unref();
  }

  /**
   * Records `point` in the claim's row, in the work's transaction `tx`, so that the work
   * and its recovery point commit together. Throws 409 IDEMPOTENCY_KEY_IN_USE when the claim
   * is no longer this request's (its lease lapsed and another request took it): the caller's
   * transaction then rolls back, and the work is the other request's to do.
   */
  async recordIn(tx: SqlRunner, point: RecoveryPoint): Promise<void> {
    const rows = await tx.execute(
      `update idempotency_keys set recovery_point = ?::jsonb
        where organization_id = ? and key = ? and claim_token = ? and status_code is null returning 1`,
      [JSON.stringify(point), this.organizationId, this.key, this.token],
    );
    if (rows.length === 0) throw keyInUse();
  }

  async complete(response: StoredResponse): Promise<void> {
    clearInterval(this.renewal);
    await this.store.complete(this, response);
  }

  async release(): Promise<void> {
    clearInterval(this.renewal);
    await this.store.release(this);
  }
}

export class IdempotencyStore {
  constructor(
    private readonly orm: Orm,
    /** How long a claim lasts without renewal (IDEMPOTENCY_LEASE_MS). */
    readonly leaseMs: number,
  ) {}

  validateKey(key: string): void {
    if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
      throw new AppError(400, 'INVALID_REQUEST', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters`, {
        field: 'Idempotency-Key',
      });
    }
  }

  async claim(organizationId: string, key: string, hash: string): Promise<Claim> {
    const conn = this.orm.em.getConnection();
    const token = randomUUID();
    // An expired record, or a claim whose lease lapsed before its work committed anything
    // (its API died: no recovery point), is replaced in the same statement that claims the key.
    const claimed = await conn.execute(
      `insert into idempotency_keys (organization_id, key, request_hash, claim_token, locked_until)
       values (?, ?, ?, ?, now() + ? * interval '1 millisecond')
       on conflict (organization_id, key) do update
         set request_hash = excluded.request_hash, status_code = null, response_body = null, recovery_point = null, created_at = now(),
             claim_token = excluded.claim_token, locked_until = excluded.locked_until
         where idempotency_keys.created_at < now() - interval '${IDEMPOTENCY_TTL_HOURS} hours'
            or (idempotency_keys.status_code is null and idempotency_keys.recovery_point is null and idempotency_keys.locked_until < now())
       returning key`,
      [organizationId, key, hash, token, this.leaseMs],
    );
    if (claimed.length > 0) return { kind: 'claimed', held: new HeldClaim(this, organizationId, key, token) };

    const [row] = await conn.execute<Array<{ request_hash: string; status_code: number | null; response_body: unknown; recovery_point: RecoveryPoint | null }>>(
      'select request_hash, status_code, response_body, recovery_point from idempotency_keys where organization_id = ? and key = ?',
      [organizationId, key],
    );
    if (!row) return this.claim(organizationId, key, hash);
    if (row.request_hash !== hash) {
      throw new AppError(409, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request', {
        field: 'Idempotency-Key',
      });
    }
    if (row.status_code === null) {
      if (row.recovery_point !== null) return { kind: 'resume', point: row.recovery_point };
      throw keyInUse();
    }
    return { kind: 'replay', response: { status: row.status_code, body: row.response_body } };
  }

  async renew(claim: HeldClaim): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute(
        `update idempotency_keys set locked_until = now() + ? * interval '1 millisecond'
          where organization_id = ? and key = ? and claim_token = ? and status_code is null`,
        [this.leaseMs, claim.organizationId, claim.key, claim.token],
      );
  }

  async complete(claim: HeldClaim, response: StoredResponse): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute('update idempotency_keys set status_code = ?, response_body = ?::jsonb where organization_id = ? and key = ? and claim_token = ?', [
        response.status,
        JSON.stringify(response.body ?? null),
        claim.organizationId,
        claim.key,
        claim.token,
      ]);
  }

  /**
   * Stores the answer a retry rebuilt from the recovery point (`resume`): the first retry to
   * store it wins (the answers are built from the same committed rows).
   */
  async completeResumed(organizationId: string, key: string, response: StoredResponse): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute('update idempotency_keys set status_code = ?, response_body = ?::jsonb where organization_id = ? and key = ? and status_code is null', [
        response.status,
        JSON.stringify(response.body ?? null),
        organizationId,
        key,
      ]);
  }

  /** Gives the key back, unless the work committed a recovery point: a retry resumes from it then. */
  async release(claim: HeldClaim): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute('delete from idempotency_keys where organization_id = ? and key = ? and claim_token = ? and status_code is null and recovery_point is null', [
        claim.organizationId,
        claim.key,
        claim.token,
      ]);
  }

  /** Deletes records past their 24 h; called periodically by the API process. */
  async purgeExpired(): Promise<number> {
    const rows = await this.orm.em
      .getConnection()
      .execute(`delete from idempotency_keys where created_at < now() - interval '${IDEMPOTENCY_TTL_HOURS} hours' returning key`);
    return rows.length;
  }
}

export const shouldStore = (status: number) => status < 500 && status !== 429;
