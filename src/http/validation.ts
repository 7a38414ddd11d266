/**
 * Owns input validation at the edge: a zod schema parses a body, query or path, and the
 * first problem becomes one contract error naming the dotted field. Resources choose
 * their own codes (INVALID_WORKFLOW_CONFIG, INVALID_NODE_CONFIG, ...) with a classifier.
 */
import { z } from './zod';
import { AppError, formatFieldPath } from './errors';

export type ZodIssue = z.core.$ZodIssue;

export interface IssueContext {
  issue: ZodIssue;
  /** Path of the offending field; for an unknown key, the path includes that key. */
  path: PropertyKey[];
  field: string;
  /** True when the value at `path` is absent from the input. */
  missing: boolean;
}

/** Returns the status and code for an issue, or undefined to use the defaults. */
export type IssueClassifier = (ctx: IssueContext) => { status: number; code: string } | undefined;

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

function describe(issue: ZodIssue, field: string, missing: boolean): string {
  if (issue.code === 'unrecognized_keys') return `Unknown field "${field}"`;
  if (missing) return `${field} is required`;
  const where = field === '' ? 'Request' : field;
  return `${where}: ${issue.message}`;
}

export function toAppError(issue: ZodIssue, input: unknown, classify?: IssueClassifier): AppError {
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0] ?? ''] : [...issue.path];
  const field = formatFieldPath(path);
  const missing = issue.code !== 'unrecognized_keys' && issue.code !== 'custom' && valueAt(input, path) === undefined;
  const ctx: IssueContext = { issue, path, field, missing };
  const chosen = classify?.(ctx) ?? (missing ? { status: 400, code: 'MISSING_REQUIRED_FIELD' } : { status: 400, code: 'INVALID_REQUEST' });
  return new AppError(chosen.status, chosen.code, describe(issue, field, missing), field === '' ? {} : { field });
}

export function parseInput<S extends z.ZodType>(schema: S, input: unknown, classify?: IssueClassifier): z.output<S> {
  return parsedOrThrow(schema.safeParse(input), input, classify);
}

/** A `safeParse` result already in hand (route.ts parses a body once, before its limits): its data, or its first issue as the 4xx. */
export function parsedOrThrow<T>(result: z.ZodSafeParseResult<T>, input: unknown, classify?: IssueClassifier): T {
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new AppError(400, 'INVALID_REQUEST', 'Invalid request');
  throw toAppError(issue, input, classify);
}

/** Query-string helpers: every query value arrives as a string. */
export const queryBoolean = z.enum(['true', 'false']).transform((v) => v === 'true');
/**
 * A query integer: only 1–9 plain digits are converted, anything else stays as it came and
 * fails with "must be an integer". A preprocess (not a string pipe) so that the OpenAPI
 * document describes the parameter as an integer with its bounds.
 */
export const queryInt = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : v),
    z.number({ error: (issue) => (issue.code === 'invalid_type' ? 'must be an integer' : undefined) }).int().min(min).max(max),
  );
export const isoDateTime = z.iso.datetime({ offset: true }).or(z.iso.date());
