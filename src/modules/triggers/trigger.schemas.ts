/**
 * Owns the trigger's In / Update / Out shapes and the per-type configuration rules.
 * Configuration problems are 400 INVALID_TRIGGER_CONFIG with the dotted field (an empty
 * keyword list is `configuration.keywords`), a bad cron expression is 422
 * INVALID_CRON_EXPRESSION, and a missing required field is 400 MISSING_REQUIRED_FIELD.
 * Fields the service assigns (`url`, `endpoint`) and counters never come from a client.
 */
import { CronExpressionParser } from 'cron-parser';
import { paginationQuery } from '../../http/pagination';
import type { IssueClassifier } from '../../http/validation';
import { isoDateTime } from '../../http/validation';
import { Timestamp } from '../../http/openapi';
import { z } from '../../http/zod';
import { DailyMetricOut, MetricsCountersOut, metricsQueryFields, PeriodOut } from '../metrics/execution-metrics';
import { Channel, checkDebounce, debounceFields } from '../workflows/workflow.schemas';
import { TRIGGER_STATUSES, TRIGGER_TYPES } from './trigger.entity';

export const NAME_MAX = 200;
export const WEBHOOK_METHODS = ['POST', 'PUT', 'PATCH', 'GET', 'DELETE'] as const;
export const API_RATE_LIMIT_MAX = 100_000;
export const DEFAULT_API_RATE_LIMIT = 1000;

/** Five fields, each parsable by cron-parser and by Temporal (which knows no `H` hashes). */
export function cronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 || fields[0] === '') return `must have exactly five fields (minute hour day-of-month month day-of-week), got ${fields[0] === '' ? 0 : fields.length}`;
  if (fields.some((f) => !/^[0-9A-Za-z*,/?#-]+$/.test(f) || /(^|[^A-Za-z])H([^A-Za-z]|$)/.test(f))) return 'contains unsupported characters';
  try {
    CronExpressionParser.parse(fields.join(' '), { tz: 'UTC' });
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const keyword = z.string().trim().min(1, 'keywords must not be blank').max(100);

export const MessageTriggerConfig = z
  .strictObject({
    keywords: z.array(keyword).min(1, 'keywords must not be empty').max(50),
    case_sensitive: z.boolean().default(false),
    exact_match: z.boolean().default(false),
    language: z
      .string()
      .regex(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/, 'must be a language code such as "en" or "pt-BR"')
      .max(35)
      .optional(),
    channel: Channel.optional(),
    ...debounceFields,
  })
  .superRefine(checkDebounce)
  .openapi('MessageTriggerConfig');
export type MessageTriggerConfig = z.output<typeof MessageTriggerConfig>;

export const ScheduleTriggerConfig = z
  .strictObject({
    cron_expression: z
      .string()
      .max(120)
      .superRefine((v, ctx) => {
        const problem = cronProblem(v);
        if (problem) ctx.addIssue({ code: 'custom', message: `invalid cron expression: ${problem}` });
      })
      .transform((v) => v.trim().split(/\s+/).join(' ')),
    timezone: z
      .string()
      .max(64)
      .refine(isTimeZone, 'must be an IANA time zone such as "Europe/Paris"')
      .default('UTC'),
    start_date: isoDateTime.optional(),
    end_date: isoDateTime.optional(),
  })
  .superRefine((c, ctx) => {
    if (c.start_date && c.end_date && Date.parse(c.end_date) <= Date.parse(c.start_date)) {
      ctx.addIssue({ code: 'custom', path: ['end_date'], message: 'end_date must be after start_date' });
    }
  })
  .openapi('ScheduleTriggerConfig');
export type ScheduleTriggerConfig = z.output<typeof ScheduleTriggerConfig>;

const headerName = z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'must be an HTTP header name');

export const WebhookTriggerConfig = z
  .strictObject({
    /** Assigned by the service; accepted back only unchanged (so a GET body can be PUT back). */
    url: z.string().max(2048).optional(),
    secret: z.string().min(24, 'secret must be at least 24 characters').max(256).optional(),
    method: z.enum(WEBHOOK_METHODS).default('POST'),
    headers: z
      .record(headerName, z.string().min(1).max(1024))
      .refine((h) => Object.keys(h).length <= 20, 'at most 20 headers')
      .default({}),
  })
  .openapi('WebhookTriggerConfig');
export type WebhookTriggerConfig = z.output<typeof WebhookTriggerConfig>;

export const ApiTriggerConfig = z
  .strictObject({
    /** Assigned by the service; accepted back only unchanged. */
    endpoint: z.string().max(2048).optional(),
    authentication: z.literal('api_key').default('api_key'),
    rate_limit: z.number().int().min(1).max(API_RATE_LIMIT_MAX).default(DEFAULT_API_RATE_LIMIT),
  })
  .openapi('ApiTriggerConfig');
export type ApiTriggerConfig = z.output<typeof ApiTriggerConfig>;

export const CONFIG_SCHEMAS = {
  message: MessageTriggerConfig,
  schedule: ScheduleTriggerConfig,
  webhook: WebhookTriggerConfig,
  api: ApiTriggerConfig,
} as const;

/** configuration.cron_expression → 422; other configuration problems → 400 INVALID_TRIGGER_CONFIG. */
export const classifyTriggerIssue: IssueClassifier = ({ path, missing, issue }) => {
  if (path[0] === 'configuration' && path.length >= 2) {
    if (missing && issue.code !== 'unrecognized_keys') return { status: 400, code: 'MISSING_REQUIRED_FIELD' };
    if (path[1] === 'cron_expression') return { status: 422, code: 'INVALID_CRON_EXPRESSION' };
    return { status: 400, code: 'INVALID_TRIGGER_CONFIG' };
  }
  if (path[0] === 'configuration' && !missing) return { status: 400, code: 'INVALID_TRIGGER_CONFIG' };
  if (path[0] === 'granularity' && !missing) return { status: 422, code: 'INVALID_GRANULARITY' };
  return undefined;
};

const name = z.string().trim().min(1, 'name must not be empty').max(NAME_MAX);
const triggerId = z.string().max(64);

const common = { name, workflow_id: z.string().min(1).max(64), channel: Channel.optional() };

export const TriggerIn = z
  .discriminatedUnion('type', [
    z.strictObject({ ...common, type: z.literal('message'), configuration: MessageTriggerConfig }),
    z.strictObject({ ...common, type: z.literal('schedule'), configuration: ScheduleTriggerConfig }),
    z.strictObject({ ...common, type: z.literal('webhook'), configuration: WebhookTriggerConfig }),
    z.strictObject({ ...common, type: z.literal('api'), configuration: ApiTriggerConfig }),
  ])
  .openapi('TriggerCreate', { description: '`channel` defaults to the workflow\'s channel.' });
export type TriggerIn = z.output<typeof TriggerIn>;

export const TriggerUpdate = z
  .strictObject({
    name: name.optional(),
    configuration: z
      .record(z.string(), z.unknown())
      .optional()
      .openapi({ description: 'The whole configuration for the trigger\'s type (replaces the previous one; a webhook keeps its secret when none is given)' }),
  })
  .openapi('TriggerUpdate');

const triggerOutBase = {
  id: z.string().openapi({ example: 'trg_4eC39HqLyjWDarjtT1zd' }),
  name: z.string(),
  status: z.enum(TRIGGER_STATUSES),
  workflow_id: z.string(),
  channel: Channel,
  created_at: Timestamp,
  updated_at: Timestamp,
  execution_count: z.number().int(),
  last_triggered: Timestamp.nullable(),
};

/** The shape the routes build; the document describes it as `TriggerOut`, one variant per type. */
export const TriggerRecordOut = z.object({ ...triggerOutBase, type: z.enum(TRIGGER_TYPES), configuration: z.record(z.string(), z.unknown()) });

/** Discriminated by `type`, so generated clients narrow `configuration` (list items omit the webhook `secret`). */
export const TriggerOut = z
  .discriminatedUnion('type', [
    z.object({ ...triggerOutBase, type: z.literal('message'), configuration: MessageTriggerConfig }).openapi('MessageTrigger'),
    z.object({ ...triggerOutBase, type: z.literal('schedule'), configuration: ScheduleTriggerConfig }).openapi('ScheduleTrigger'),
    z.object({ ...triggerOutBase, type: z.literal('webhook'), configuration: WebhookTriggerConfig }).openapi('WebhookTrigger'),
    z.object({ ...triggerOutBase, type: z.literal('api'), configuration: ApiTriggerConfig }).openapi('ApiTrigger'),
  ])
  .openapi('Trigger');

export const TriggerListQuery = z.strictObject({
  ...paginationQuery,
  type: z.enum(TRIGGER_TYPES).optional(),
  status: z.enum(TRIGGER_STATUSES).optional(),
  workflow_id: z.string().min(1).max(64).optional(),
});

export const TriggerIdParams = z.object({ trigger_id: triggerId });
export const TriggerExecutionParams = z.object({ trigger_id: triggerId, execution_id: z.string().max(64) });

export const TriggerTransitionOut = z
  .object({
    id: z.string(),
    status: z.enum(TRIGGER_STATUSES),
    activated_at: Timestamp.optional(),
    deactivated_at: Timestamp.optional(),
    paused_at: Timestamp.optional(),
    resumed_at: Timestamp.optional(),
  })
  .openapi('TriggerTransition');

/**
 * `skipped`: the workflow's concurrency rule started nothing (its execution for the customer
 * was still running); `queued`: its execution waits for the customer's running one.
 */
export const TRIGGER_EXECUTION_STATUSES = ['success', 'failed', 'running', 'queued', 'skipped'] as const;

export const TriggerExecutionOut = z
  .object({
    id: z.string().openapi({ example: 'trgexec_4eC39HqLyjWDarjtT1zd' }),
    trigger_id: z.string(),
    workflow_id: z.string(),
    status: z.enum(TRIGGER_EXECUTION_STATUSES),
    triggered_at: Timestamp,
    completed_at: Timestamp.nullable(),
    duration_ms: z.number().int().nullable(),
    input: z.record(z.string(), z.unknown()),
    output: z.object({ workflow_execution_id: z.string().nullable() }),
  })
  .openapi('TriggerExecution');

export const TriggerExecutionDetailOut = TriggerExecutionOut.extend({
  input: z.record(z.string(), z.unknown()).and(z.object({ metadata: z.object({ user_agent: z.string().nullable(), timestamp: Timestamp }).passthrough() })),
  output: z.object({ workflow_execution_id: z.string().nullable(), workflow_status: z.string().nullable() }),
  error: z
    .object({ code: z.string(), type: z.string().nullable(), message: z.string() })
    .nullable()
    .openapi({
      description:
        'Why a `failed` firing started nothing; for a `skipped` one, the concurrency rule\'s reason: `already_running` (the execution for the customer runs) or `queue_full`',
    }),
}).openapi('TriggerExecutionDetail');

export const TriggerExecutionListQuery = z.strictObject({
  ...paginationQuery,
  status: z.enum(TRIGGER_EXECUTION_STATUSES).optional(),
  start_date: isoDateTime.optional(),
  end_date: isoDateTime.optional(),
});

export const TriggerMetricsQuery = z.strictObject(metricsQueryFields);

export const TriggerMetricsOut = z
  .object({
    trigger_id: z.string(),
    period: PeriodOut,
    metrics: MetricsCountersOut,
    daily_metrics: z.array(DailyMetricOut),
  })
  .openapi('TriggerMetrics');

/** The body POSTed to an api trigger's endpoint: any JSON object, used as the execution input. */
export const TriggerFireIn = z.record(z.string(), z.unknown()).openapi('TriggerFireInput');
