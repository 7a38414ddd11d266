/**
 * Owns the error contract: `AppError` is the only error whose status, code and message
 * reach a client. Everything else becomes a generic 500 (see error-middleware.ts).
 */

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

export const badRequest = (message: string, field?: string, code = 'INVALID_REQUEST') =>
  new AppError(400, code, message, field === undefined ? {} : { field });

export const notFound = (code: string, what: string) => new AppError(404, code, `${what} not found`);

export const conflict = (code: string, message: string, field?: string) =>
  new AppError(409, code, message, field === undefined ? {} : { field });

/** Formats a zod-style path as the contract's dotted field: `configuration.nodes[0].content`. */
export function formatFieldPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}
