/**
 * Owns the error contract: `AppError` is an HTTP error (status, code, message, headers);
 * `toHttpError` is the one place where domain errors (src/errors.ts) become HTTP errors.
 * Everything else becomes a generic 500 (or a 503 for an unavailable dependency; see
 * middleware.ts).
 */
import { DomainError, type DomainErrorKind } from '../errors';

export interface ErrorBody {
  code: string;
  message: string;
  details?: string;
  field?: string;
  retry_after?: number;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: { field?: string; details?: string; retryAfter?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message };
    if (this.extra.details !== undefined) body.details = this.extra.details;
    if (this.extra.field !== undefined) body.field = this.extra.field;
    if (this.extra.retryAfter !== undefined) body.retry_after = this.extra.retryAfter;
    return body;
  }
}

const STATUS_OF: Record<DomainErrorKind, number> = { invalid: 400, not_found: 404, conflict: 409, gone: 410, unprocessable: 422, unavailable: 503 };

/** The HTTP error a client sees for `err`, or undefined when it is not one it may see. */
export function toHttpError(err: unknown): AppError | undefined {
  if (err instanceof AppError) return err;
  if (!(err instanceof DomainError)) return undefined;
  const { field, details, retryAfterSeconds } = err.extra;
  const extra: AppError['extra'] = {};
  if (field !== undefined) extra.field = field;
  if (details !== undefined) extra.details = details;
  if (retryAfterSeconds !== undefined) {
    extra.headers = { 'Retry-After': String(retryAfterSeconds) };
    // A 503 says it in the body too, as SERVICE_UNAVAILABLE does; a 409 *_NOT_READY only in the header.
    if (err.kind === 'unavailable') extra.retryAfter = retryAfterSeconds;
  }
  return new AppError(STATUS_OF[err.kind], err.code, err.message, extra);
}

/** Formats a zod-style path as the contract's dotted field: `configuration.nodes[0].content`. */
export function formatFieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}
