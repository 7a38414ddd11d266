/**
 * Owns the domain's errors: what went wrong in business terms (a kind and a contract
 * code), never an HTTP status. Services and activities throw and test these; the HTTP
 * layer maps kinds to statuses in one place (src/http/errors.ts `toHttpError`) and
 * Temporal activities map them to their own failure types (temporal/).
 */

export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'unprocessable';

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    /** The contract's code: WORKFLOW_NOT_FOUND, TRIGGER_NOT_ACTIVE, ... */
    readonly code: string,
    message: string,
    readonly extra: { field?: string; details?: string } = {},
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
