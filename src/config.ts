/**
 * Owns the process configuration: every environment variable the service reads is parsed
 * and validated here once, at start, into a frozen object. A bad value stops the process
 * with a message naming the variable.
 */
import { z } from 'zod';
import { parseTrustProxy } from './proxy-trust';
import { readFileSync } from 'node:fs';
import { parseKeyring, parseSecretsKey } from './secrets';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = z.coerce.number().int().positive();

/** The shortest form `timeout_seconds` the API accepts (docs/decisions.md). */
export const FORM_TIMEOUT_MIN_SECONDS = 10;

/** Meta's customer service window: 24 hours after the customer's last message. */
/**
 * The Graph API version the service calls, written here once: the default of
 * META_GRAPH_API_URL and INSTAGRAM_GRAPH_API_URL. Meta keeps a version about two years; moving
 * to the next is a change of this line (or, without a release, of those two settings), see
 * docs/channels.md "Graph API version".
 */
export const META_GRAPH_API_VERSION = 'v23.0';

export const CUSTOMER_SERVICE_WINDOW_SECONDS = 24 * 3600;

/**
 * The shortest form `timeout_seconds` accepted: 10, or a valid test-only
 * FORM_TIMEOUT_MIN_SECONDS outside production (loadConfig refuses it in production).
 */
export function formTimeoutMinSeconds(env: NodeJS.ProcessEnv = process.env): number {
  if (env.NODE_ENV === 'production' || env.FORM_TIMEOUT_MIN_SECONDS === undefined) return FORM_TIMEOUT_MIN_SECONDS;
  const lowered = Number(env.FORM_TIMEOUT_MIN_SECONDS);
  return Number.isInteger(lowered) && lowered >= 1 && lowered <= FORM_TIMEOUT_MIN_SECONDS ? lowered : FORM_TIMEOUT_MIN_SECONDS;
}

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

export const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  /** Address clients use to reach the service, without /v1; builds trigger URLs and download links. */
  PUBLIC_BASE_URL: z.url().optional(),
  DATABASE_URL: z.string().min(1).default('postgresql://postgres@127.0.0.1:5432/workflow_automation'),
  DATABASE_POOL_MAX: positiveInt.default(10),
  /**
   * How long a query may wait for a pooled connection (and a new connection may take to
   * open) before failing: bounds how long a request hangs while PostgreSQL is away.
   */
  DATABASE_ACQUIRE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(2_000),
  REDIS_URL: z.string().min(1).default('redis://127.0.0.1:6379'),
  /** Prefix for every Redis key, so that several deployments or test runs share one Redis. */
  REDIS_KEY_PREFIX: z.string().default('wfa:'),
  /** Unset: `npm start` runs a local Temporal dev server. Set: that server is used. */
  TEMPORAL_ADDRESS: z.string().min(1).optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('workflow-automation'),
  /**
   * A workflow bundle already built from this same code (`bundleWorkflowCode`, written to a
   * file): the worker loads it instead of bundling temporal/workflows with webpack at start
   * (seconds). Unset: bundled at start. The test suite builds one per run and sets this.
   */
  TEMPORAL_WORKFLOW_BUNDLE_PATH: z.string().min(1).optional(),
  /**
   * Test-only: how long a workflow task waits on a worker's sticky queue before Temporal
   * hands it to any worker (the SDK's default, 10 s, when unset). A SIGKILLed worker's
   * workflows wait that long for their next task; crash tests lower it. Refused when
   * NODE_ENV=production.
   */
  TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).optional(),
  /**
   * The API's background Temporal calls (execution starts, reply signals): at most this
   * many in flight per process, fewer while Temporal answers slower than twice its idle
   * latency (src/adaptive-capacity.ts); the waiting calls are served to the organizations
   * fairly, the one with the fewest in flight first (docs/performance.md, section
   * `fairness`). BACKGROUND_CALLS_PER_ORGANIZATION, a fixed share, is refused (loadConfig).
   */
  BACKGROUND_CALLS_IN_FLIGHT: positiveInt.default(16),
  /**
   * Inbound messages (`POST /v1/messages`) one organization may have recorded at once in an
   * API process while another organization's messages arrived within the last 2 s; the rest
   * wait their turn in memory. Alone, an organization is not held back (docs/performance.md,
   * "A flood's requests, and the reconciler's bursts").
   */
  INBOUND_MESSAGES_PER_ORGANIZATION: positiveInt.default(1),
  /**
   * While another organization is active, an organization's next inbound message waits to be
   * recorded as long as this many of its execution starts wait for a slot among the API's
   * Temporal calls: its messages are then recorded as fast as its conversations start
   * (docs/performance.md, "Recording at the pace of the starts, and a flooding organization's share").
   */
  INBOUND_STARTS_WAITING_PER_ORGANIZATION: positiveInt.default(4),
  /**
   * The worker's task slots: activities it runs at once (the SDK's 100 when unset); workflow
   * tasks, a fixed count (the SDK's 40 when unset), or with WORKER_TARGET_CPU as many as keep
   * the machine's CPU under it (at least 8; temporal/worker.ts `workerTuner`); and activity
   * slots reserved for eager dispatch per workflow task (3; 0 turns eager dispatch off).
   * Tasks beyond the slots wait in the Temporal server's task queue, where priority and
   * fairness keys order them (docs/performance.md, section `fairness`).
   */
  WORKER_ACTIVITY_SLOTS: z.coerce.number().int().min(1).max(1000).optional(),
  WORKER_WORKFLOW_TASK_SLOTS: z.coerce.number().int().min(2).max(1000).optional(),
  WORKER_TARGET_CPU: z.coerce.number().gt(0).max(1).optional(),
  WORKER_EAGER_ACTIVITY_SLOTS: z.coerce.number().int().min(0).max(100).optional(),
  /**
   * Test-only: the webhook delivery workflow's margin around an attempt's HTTP timeout (the
   * DB read and log write; 5 s when unset, temporal/webhooks.shared.ts). The delivery's
   * workflow task timeout follows from it, and that is how long Temporal waits before a
   * SIGKILLed worker's first attempt is retried elsewhere; the crash test lowers it.
   * Refused when NODE_ENV=production.
   */
  WEBHOOK_ATTEMPT_MARGIN_MS: z.coerce.number().int().min(500).max(5_000).optional(),
  /**
   * Longest a request waits on a Temporal start or signal; the execution is committed
   * first, so a slower (or unreachable) Temporal leaves the start to the reconciler.
   */
  TEMPORAL_CALL_TIMEOUT_MS: z.coerce.number().int().min(50).max(30_000).default(1_000),
  TEMPORAL_UI_PORT: z.coerce.number().int().min(1).max(65535).default(8233),
  /** The Temporal Web UI's address: set, responses link to their runs (`temporal_ui_url`). `npm start` sets the local UI's. */
  TEMPORAL_UI_URL: z.url().optional(),
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: bool.default(false),
  /** Outbound webhook request timeout (connect + answer); the contract says 10 s, tests shorten it. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(10_000),
  /** PEM file of extra CAs trusted for webhook targets (beside the system roots): test receivers, private PKI. */
  WEBHOOK_EXTRA_CA_FILE: z.string().min(1).optional(),
  /** After a secret rotation, how long the replaced secret keeps signing beside the new one (fractions allowed: tests, staging). */
  WEBHOOK_SECRET_OVERLAP_HOURS: z.coerce.number().min(0).max(24 * 30).default(24),
  /**
   * A webhook whose attempts have all failed for this long (fractions allowed), with at
   * least WEBHOOK_DISABLE_MIN_ATTEMPTS of them, is disabled (`persistent_failure`).
   */
  WEBHOOK_DISABLE_AFTER_HOURS: z.coerce.number().min(0).max(24 * 365).default(72),
  WEBHOOK_DISABLE_MIN_ATTEMPTS: z.coerce.number().int().min(1).max(1_000_000).default(10),
  /** Deliveries a webhook recovery starts per second, at most (the webhook's own rate_limit still applies to them). */
  WEBHOOK_RECOVERY_RATE_PER_SECOND: z.coerce.number().int().min(1).max(1000).default(20),
  /** Batches (one a second) a recovery workflow runs before it continues as new (bounds its Temporal history). */
  WEBHOOK_RECOVERY_BATCHES_PER_RUN: z.coerce.number().int().min(1).max(1000).default(100),
  /** How often the event dispatcher polls the outbox when no NOTIFY woke it. */
  /** Dispatched events older than this are deleted (hourly); redelivery needs the event. */
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  /** How often GET /v1/analytics/realtime/stream pushes the realtime object. */
  ANALYTICS_STREAM_INTERVAL_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
  WEBHOOK_DISPATCH_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  /** OAuth sign-in attempts allowed per email and per IP address in 15 minutes. */
  SIGNIN_ATTEMPTS_PER_EMAIL: positiveInt.default(10),
  SIGNIN_ATTEMPTS_PER_IP: positiveInt.default(50),
  /**
   * Which senders' X-Forwarded-For / -Proto / -Host are believed: unset trusts none; a
   * number trusts that many proxy hops; otherwise addresses and CIDR ranges (comma-separated,
   * or loopback, linklocal, uniquelocal). See src/proxy-trust.ts.
   */
  TRUST_PROXY: z.string().default('').superRefine((value, ctx) => {
    try {
      parseTrustProxy(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  }),
  /** The `aud` every JWT must carry; unset = the public base URL. */
  JWT_AUDIENCE: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long an authenticated API key stays cached in-process; bounds how late a revocation bites. */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(1000).default(500),
  /**
   * AES-256-GCM key (32 bytes, base64 or hex) sealing the secrets stored in PostgreSQL
   * (src/secrets.ts). Required in production; `npm start` generates one into .data/.
   */
  SECRETS_ENCRYPTION_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || parseSecretsKey(v) !== undefined, 'must be 32 bytes, base64 (44 characters) or hex (64 characters)'),
  /**
   * The keyring: `id:key` pairs (comma-separated), the key that seals first; every key a
   * stored secret may be sealed under must be there (docs/deploy.md, "Rotating the secrets
   * key"). SECRETS_ENCRYPTION_KEY=<key> is the keyring `default:<key>`; set one of the two.
   * SECRETS_ENCRYPTION_KEYS_FILE names a file holding the value instead (read by loadConfig).
   */
  SECRETS_ENCRYPTION_KEYS: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      const keys = v === undefined || v === '' ? [] : parseKeyring(v);
      if (typeof keys === 'string') ctx.addIssue({ code: 'custom', message: keys });
    }),
  /** The Meta Graph API base (with its version): WhatsApp Cloud API and Instagram Messaging connections. */
  META_GRAPH_API_URL: z.url().default(`https://graph.facebook.com/${META_GRAPH_API_VERSION}`),
  /** The Graph API base of Instagram connections with `login: instagram` (Business Login for Instagram tokens). */
  INSTAGRAM_GRAPH_API_URL: z.url().default(`https://graph.instagram.com/${META_GRAPH_API_VERSION}`),
  /** Twilio's REST API base: the `/test` of twilio_voice connections reads the account there. */
  TWILIO_API_URL: z.url().default('https://api.twilio.com'),
  /**
   * How long a voice hook waits for the execution to reach its next wait (or its end) before
   * answering `<Pause length="1"/><Redirect>` back to itself: the caller hears a short pause,
   * and the redirected request collects what was produced since.
   */
  VOICE_ANSWER_BUDGET_MS: z.coerce.number().int().min(100).max(14_000).default(4_000),
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
  /**
   * How long activities keep retrying while our own infrastructure (PostgreSQL, Redis) is
   * unavailable before the execution fails; provider errors keep their own bounded budget.
   */
  ACTIVITY_INFRA_RETRY_HOURS: z.coerce.number().positive().max(720).default(1),
  /** Worker-only processes serve /metrics on this port (unset: none; the API serves its own /metrics). */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Reports and exports: where files go (see docs/reports.md). `local` keeps them under FILE_STORAGE_DIR. */
  FILE_STORAGE: z.enum(['local', 's3']).default('local'),
  FILE_STORAGE_DIR: z.string().min(1).default('.data/files'),
  S3_ENDPOINT: z.url().optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  /** Unset: the AWS SDK's default credential chain (environment, profile, instance role). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: bool.default(false),
  /** S3 only: downloads answer 302 to a presigned URL valid this many seconds (0 = stream through the API). */
  S3_PRESIGNED_DOWNLOAD_TTL_SECONDS: z.coerce.number().int().min(0).max(3600).default(0),
  /** Report and export files are deleted (and their records marked expired) this long after completion. */
  REPORT_RETENTION_DAYS: z.coerce.number().int().min(1).max(365).default(7),
  /** Batches a replay workflow runs before it continues as new (bounds its Temporal history). */
  REPLAY_BATCHES_PER_RUN: z.coerce.number().int().min(1).max(1000).default(100),
  /**
   * Test-only: lowers the shortest form `timeout_seconds` accepted (10 s) so that tests wait
   * for a real form timeout in seconds, not ten. Refused when NODE_ENV=production. Read
   * when the workflow schemas load (formTimeoutMinSeconds), so it is set in the environment.
   */
  FORM_TIMEOUT_MIN_SECONDS: z.coerce.number().int().min(1).max(FORM_TIMEOUT_MIN_SECONDS).optional(),
  /**
   * Whether the API and the worker apply pending migrations at start (they take turns, see
   * src/db/migration-lock.ts). Off where a deploy step runs `npm run migrate` first.
   */
  MIGRATE_ON_START: bool.default(true),
  /**
   * How long an `Idempotency-Key` claim holds without renewal: a request renews it while it
   * runs, so this is how soon a retry may run a request whose API died (src/http/idempotency.ts).
   */
  IDEMPOTENCY_LEASE_MS: z.coerce.number().int().min(300).max(600_000).default(10_000),
  /**
   * Test-only: shortens Meta's 24-hour customer service window (in seconds), so that tests
   * see a form wait end at the window's close in seconds. Refused when NODE_ENV=production.
   */
  CUSTOMER_SERVICE_WINDOW_SECONDS: z.coerce.number().int().min(1).max(CUSTOMER_SERVICE_WINDOW_SECONDS).optional(),
  /** Test-only crash points (comma-separated names): the process SIGKILLs itself there. */
  FAILPOINTS: z.string().default(''),
  ...rateLimitShape,
});

export type Config = Readonly<
  z.infer<typeof envSchema> & { TEMPORAL_ADDRESS_EFFECTIVE: string; BASE_URL: string; JWT_AUDIENCE_EFFECTIVE: string }
>;

export class ConfigError extends Error {}

/** Meta's customer service window in ms: 24 hours, or the test-only CUSTOMER_SERVICE_WINDOW_SECONDS. */
export const customerServiceWindowMsOf = (config: Pick<Config, 'CUSTOMER_SERVICE_WINDOW_SECONDS'>): number =>
  (config.CUSTOMER_SERVICE_WINDOW_SECONDS ?? CUSTOMER_SERVICE_WINDOW_SECONDS) * 1000;

/** How long activities wait out an outage of our own infrastructure (ACTIVITY_INFRA_RETRY_HOURS), in ms. */
export const infraRetryMsOf = (config: Config): number => config.ACTIVITY_INFRA_RETRY_HOURS * 3_600_000;

/** A webhook delivery's attempt timing as its workflow input carries it: the HTTP timeout, and the test-only margin when set. */
export const deliveryTimingOf = (config: Config): { httpTimeoutMs: number; attemptMarginMs?: number } => ({
  httpTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
  ...(config.WEBHOOK_ATTEMPT_MARGIN_MS !== undefined ? { attemptMarginMs: config.WEBHOOK_ATTEMPT_MARGIN_MS } : {}),
});

/**
 * `SECRETS_ENCRYPTION_KEYS_FILE`: the keyring read from a file (a mounted Secret, the compose
 * stack's generated key), as `SECRETS_ENCRYPTION_KEYS`.
 */
function withFileVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const file = env.SECRETS_ENCRYPTION_KEYS_FILE;
  if (!file) return env;
  if (env.SECRETS_ENCRYPTION_KEYS) throw new ConfigError('Invalid configuration:\n  SECRETS_ENCRYPTION_KEYS_FILE: set it or SECRETS_ENCRYPTION_KEYS, not both');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  SECRETS_ENCRYPTION_KEYS_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return { ...env, SECRETS_ENCRYPTION_KEYS: text.trim() };
}

/**
 * Validates the environment into the configuration; throws a ConfigError naming each bad
 * variable. `requireSecretsKey`: the caller seals or opens secrets (the API and the worker),
 * so a missing keyring stops it at start in every NODE_ENV, not at its first secret.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: { requireSecretsKey?: boolean } = {}): Config {
  const parsed = envSchema.safeParse(withFileVariables(env));
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  if (env.BACKGROUND_CALLS_PER_ORGANIZATION !== undefined) {
    throw new ConfigError(
      'Invalid configuration:\n  BACKGROUND_CALLS_PER_ORGANIZATION: removed; an organization alone uses every slot of BACKGROUND_CALLS_IN_FLIGHT, and several share them fairly as Temporal\'s latency allows (docs/performance.md, section `fairness`). Unset it.',
    );
  }
  if (c.WORKER_TARGET_CPU !== undefined && c.WORKER_WORKFLOW_TASK_SLOTS !== undefined) {
    throw new ConfigError('Invalid configuration:\n  WORKER_TARGET_CPU: set it or WORKER_WORKFLOW_TASK_SLOTS (a fixed count), not both');
  }
  const baseUrl = (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, '');
  if (c.FILE_STORAGE === 's3' && !c.S3_BUCKET) throw new ConfigError('Invalid configuration:\n  S3_BUCKET: required when FILE_STORAGE=s3');
  if (c.NODE_ENV === 'production' && c.FORM_TIMEOUT_MIN_SECONDS !== undefined) {
    throw new ConfigError('Invalid configuration:\n  FORM_TIMEOUT_MIN_SECONDS: a test-only setting, refused when NODE_ENV=production');
  }
  if (c.NODE_ENV === 'production' && c.TEMPORAL_STICKY_QUEUE_TIMEOUT_MS !== undefined) {
    throw new ConfigError('Invalid configuration:\n  TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: a test-only setting, refused when NODE_ENV=production');
  }
  if (c.NODE_ENV === 'production' && c.WEBHOOK_ATTEMPT_MARGIN_MS !== undefined) {
    throw new ConfigError('Invalid configuration:\n  WEBHOOK_ATTEMPT_MARGIN_MS: a test-only setting, refused when NODE_ENV=production');
  }
  if (c.NODE_ENV === 'production' && c.CUSTOMER_SERVICE_WINDOW_SECONDS !== undefined) {
    throw new ConfigError('Invalid configuration:\n  CUSTOMER_SERVICE_WINDOW_SECONDS: a test-only setting, refused when NODE_ENV=production');
  }
  if (c.SECRETS_ENCRYPTION_KEYS && c.SECRETS_ENCRYPTION_KEY) {
    throw new ConfigError('Invalid configuration:\n  SECRETS_ENCRYPTION_KEYS: set it or SECRETS_ENCRYPTION_KEY, not both (SECRETS_ENCRYPTION_KEY=<key> is SECRETS_ENCRYPTION_KEYS=default:<key>)');
  }
  if ((c.NODE_ENV === 'production' || opts.requireSecretsKey) && !c.SECRETS_ENCRYPTION_KEYS && !c.SECRETS_ENCRYPTION_KEY) {
    throw new ConfigError(
      `Invalid configuration:\n  SECRETS_ENCRYPTION_KEYS: required${opts.requireSecretsKey ? '' : ' when NODE_ENV=production'} (or SECRETS_ENCRYPTION_KEY, or SECRETS_ENCRYPTION_KEYS_FILE): id:key[,id:key…], 32-byte keys in base64 or hex, e.g. k1:$(openssl rand -base64 32); npm start generates one for development`,
    );
  }
  return Object.freeze({
    ...c,
    TEMPORAL_ADDRESS_EFFECTIVE: c.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    BASE_URL: baseUrl,
    JWT_AUDIENCE_EFFECTIVE: c.JWT_AUDIENCE ?? baseUrl,
  });
}
