/**
 * Owns `Idempotency-Key` on POSTs, the way Stripe does it: the first request with a key
 * claims it (a row in PostgreSQL, so a replay survives restarts); its response is stored
 * and replayed for 24 h to a retry with the same body. The same key with another body is
 * 409 IDEMPOTENCY_KEY_REUSED; a retry while the first is still running is 409
 * IDEMPOTENCY_KEY_IN_USE. Requests that fail validation or end in a 5xx or 429 store
 * nothing, so the client may retry them with the same key.
 */
import { createHash } from 'node:crypto';
import type { Orm } from '../db/orm';
import { AppError } from './errors';

export const IDEMPOTENCY_TTL_HOURS = 24;
const MAX_KEY_LENGTH = 255;

export interface StoredResponse {
  status: number;
  body: unknown;
}

export type Claim = { kind: 'claimed' } | { kind: 'replay'; response: StoredResponse };

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${JSON.stringify(body ?? null)}`).digest('hex');
}

export class IdempotencyStore {
  constructor(private readonly orm: Orm) {}

  validateKey(key: string): void {
    if (key.length === 0 || key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
      throw new AppError(400, 'INVALID_REQUEST', `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} visible ASCII characters`, {
        field: 'Idempotency-Key',
      });
    }
  }

  async claim(organizationId: string, key: string, hash: string): Promise<Claim> {
    const conn = this.orm.em.getConnection();
    // An expired record is replaced in the same statement that claims the key.
    const claimed = await conn.execute(
      `insert into idempotency_keys (organization_id, key, request_hash) values (?, ?, ?)
       on conflict (organization_id, key) do update
         set request_hash = excluded.request_hash, status_code = null, response_body = null, created_at = now()
         where idempotency_keys.created_at < now() - interval '${IDEMPOTENCY_TTL_HOURS} hours'
       returning key`,
      [organizationId, key, hash],
    );
    if (claimed.length > 0) return { kind: 'claimed' };

    const [row] = await conn.execute<Array<{ request_hash: string; status_code: number | null; response_body: unknown }>>(
      'select request_hash, status_code, response_body from idempotency_keys where organization_id = ? and key = ?',
      [organizationId, key],
    );
    if (!row) return this.claim(organizationId, key, hash);
    if (row.request_hash !== hash) {
      throw new AppError(409, 'IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was used with a different request', {
        field: 'Idempotency-Key',
      });
    }
    if (row.status_code === null) {
      throw new AppError(409, 'IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is still being processed', {
        field: 'Idempotency-Key',
        retryAfter: 1,
        headers: { 'Retry-After': '1' },
      });
    }
    return { kind: 'replay', response: { status: row.status_code, body: row.response_body } };
  }

  async complete(organizationId: string, key: string, response: StoredResponse): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute('update idempotency_keys set status_code = ?, response_body = ?::jsonb where organization_id = ? and key = ?', [
        response.status,
        JSON.stringify(response.body ?? null),
        organizationId,
        key,
      ]);
  }

  async release(organizationId: string, key: string): Promise<void> {
    await this.orm.em
      .getConnection()
      .execute('delete from idempotency_keys where organization_id = ? and key = ? and status_code is null', [organizationId, key]);
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
