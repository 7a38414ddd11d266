/**
 * Owns the process configuration: every environment variable the service reads is parsed
 * and validated here once, at start, into a frozen object. A bad value stops the process
 * with a message naming the variable.
 */
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = z.coerce.number().int().positive();

/** Requests per window; every limit of the spec's Limits table can be overridden. */
const rateLimitDefaults = {
  RATE_LIMIT_CREDENTIAL_PER_HOUR: 1000,
  RATE_LIMIT_INBOUND_WEBHOOK_PER_MINUTE: 100,
  RATE_LIMIT_RESOURCE_READ_PER_HOUR: 1000,
  RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: 100,
  RATE_LIMIT_RESOURCE_DELETE_PER_HOUR: 50,
  RATE_LIMIT_EXECUTION_OPS_PER_HOUR: 500,
  RATE_LIMIT_ANALYTICS_REALTIME_PER_HOUR: 1000,
  RATE_LIMIT_ANALYTICS_HISTORICAL_PER_HOUR: 100,
  RATE_LIMIT_ANALYTICS_REPORTS_PER_HOUR: 50,
  RATE_LIMIT_ANALYTICS_EXPORT_PER_HOUR: 20,
} as const;

const rateLimitShape = Object.fromEntries(
  Object.entries(rateLimitDefaults).map(([k, v]) => [k, positiveInt.default(v)]),
) as { [K in keyof typeof rateLimitDefaults]: z.ZodDefault<typeof positiveInt> };

const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  /** Address clients use to reach the service, without /v1; builds trigger URLs and download links. */
  PUBLIC_BASE_URL: z.url().optional(),
  DATABASE_URL: z.string().min(1).default('postgresql://postgres@127.0.0.1:5432/workflow_automation'),
  DATABASE_POOL_MAX: positiveInt.default(10),
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
  /** Prefix for every Redis key, so that several deployments or test runs share one Redis. */
  REDIS_KEY_PREFIX: z.string().default('wfa:'),
  /** Unset: `npm start` runs a local Temporal dev server. Set: that server is used. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('workflow-automation'),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Outbound webhook request timeout (connect + answer); the contract says 10 s, tests shorten it. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** PEM file of extra CAs trusted for webhook targets (beside the system roots): test receivers, private PKI. */
  WEBHOOK_EXTRA_CA_FILE: z.string().min(1).optional(),
  /** How often the event dispatcher polls the outbox when no NOTIFY woke it. */
  /** Dispatched events older than this are deleted (hourly); redelivery needs the event. */
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  WEBHOOK_DISPATCH_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long an authenticated API key stays cached in-process; bounds how late a revocation bites. */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(1000).default(500),
  /** Executions: unset stores outbound messages as the transcript only; set, each is also POSTed here. */
  CHANNEL_PROVIDER_URL: z.url().optional(),
  CHANNEL_PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  /** Optional OpenAI-compatible base URL (…/v1) whose chat completions rewrite ai_response answers. */
  AI_MODEL_URL: z.url().optional(),
  AI_MODEL_NAME: z.string().min(1).default('gpt-4o-mini'),
  AI_MODEL_API_KEY: z.string().min(1).optional(),
  AI_MODEL_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /** How often the worker looks for committed executions whose Temporal start never happened. */
  EXECUTION_RECONCILE_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  /** Grace before the reconciler starts an execution itself (the API normally starts it within ms). */
  EXECUTION_RECONCILE_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  /** Test-only crash points (comma-separated names): the process SIGKILLs itself there. */
  FAILPOINTS: z.string().default(''),
  ...rateLimitShape,
});

export type Config = Readonly<z.infer<typeof envSchema> & { TEMPORAL_ADDRESS_EFFECTIVE: string; BASE_URL: string }>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  return Object.freeze({
    ...c,
    TEMPORAL_ADDRESS_EFFECTIVE: c.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    BASE_URL: (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, ''),
  });
}
