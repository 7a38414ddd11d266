/**
 * Owns the domain's errors: what went wrong in business terms (a kind and a contract
 * code), never an HTTP status. Services and activities throw and test these; the HTTP
 * layer maps kinds to statuses in one place (src/http/errors.ts `toHttpError`) and
 * Temporal activities map them to their own failure types (temporal/).
 */

/**
 * `gone`: it existed and no longer does (an expired file); `unavailable`: a system the
 * operation needs (the scheduler) refused or did not answer, and nothing was changed.
 */
export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'gone' | 'unprocessable' | 'unavailable';

export interface DomainErrorExtra {
  field?: string;
  details?: string;
  /** Trying again may succeed after this many seconds (a file still being generated, a dependency down). */
  retryAfterSeconds?: number;
}

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    /** The contract's code: WORKFLOW_NOT_FOUND, TRIGGER_NOT_ACTIVE, ... */
    readonly code: string,
    message: string,
    readonly extra: DomainErrorExtra = {},
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

const withField = (field?: string) => (field === undefined ? {} : { field });

export const invalid = (message: string, field?: string, code = 'INVALID_REQUEST') => new DomainError('invalid', code, message, withField(field));

export const notFound = (code: string, what: string, field?: string) => new DomainError('not_found', code, `${what} not found`, withField(field));

export const conflict = (code: string, message: string, field?: string) => new DomainError('conflict', code, message, withField(field));

export const unprocessable = (code: string, message: string, field?: string) => new DomainError('unprocessable', code, message, withField(field));

export const gone = (code: string, message: string) => new DomainError('gone', code, message);

export const unavailable = (code: string, message: string, retryAfterSeconds: number) =>
  new DomainError('unavailable', code, message, { retryAfterSeconds });

/** Contention that outlived its retries (a deadlock, a write conflict): 503 with Retry-After, never a 500. */
export const busyWithConflict = () => unavailable('SERVICE_UNAVAILABLE', 'The service is busy with a conflicting change; retry shortly', 1);
