/**
 * Owns what docs/configuration.md says about each environment variable of src/config.ts.
 * The page is generated from the zod schema (names, accepted values, defaults) and this map
 * (`npm run docs:config`); a test fails when a schema variable has no entry here, an entry
 * names no variable, or the committed page is stale. Links are relative to docs/.
 *
 * `default` is only for a default the schema cannot state (computed at start, or set by
 * `npm start`); otherwise the schema's `.default()` is shown. `testOnly` moves the variable
 * to the page's test-only table.
 */
export interface VariableDoc {
  description: string;
  default?: string;
  testOnly?: true;
}

export const configDocs: Record<string, VariableDoc> = {
  NODE_ENV: { description: '`production` refuses the test-only settings below and requires a secrets key (`SECRETS_ENCRYPTION_KEYS`)' },
  PORT: { description: 'API port (`0` picks a free one)' },
  HOST: { description: 'API bind address' },
  PUBLIC_BASE_URL: { description: 'the address clients use, without `/v1`; builds trigger URLs and download links', default: '`http://localhost:$PORT`' },
  DATABASE_URL: { description: 'PostgreSQL; the database is created if missing' },
  DATABASE_POOL_MAX: { description: 'database connections per process' },
  DATABASE_ACQUIRE_TIMEOUT_MS: { description: 'longest wait for a database connection; a request then answers 503 instead of hanging' },
  REDIS_URL: { description: 'Redis (rate limits only)' },
  REDIS_KEY_PREFIX: { description: 'prefix of every Redis key, so several deployments or test runs can share one Redis' },
  TEMPORAL_ADDRESS: { description: 'a Temporal server to use; unset = `npm start` runs a dev server on 127.0.0.1:7233' },
  TEMPORAL_NAMESPACE: { description: 'Temporal namespace' },
  TEMPORAL_TASK_QUEUE: { description: 'task queue of the worker' },
  TEMPORAL_WORKFLOW_BUNDLE_PATH: {
    description:
      'a workflow bundle built beforehand from this same code (`npm run build` writes `dist/workflow-bundle.js`; the image sets it to its prebuilt bundle); unset = the worker bundles the workflows at start (seconds)',
  },
  TEMPORAL_STICKY_QUEUE_TIMEOUT_MS: {
    description:
      "how long a workflow task waits on a worker's sticky queue before any worker may take it (the SDK's 10 s when unset); crash tests lower it. Refused when `NODE_ENV=production`",
    testOnly: true,
  },
  BACKGROUND_CALLS_IN_FLIGHT: {
    description:
      "the most Temporal starts and reply signals in flight per API process; fewer (down to 4) while Temporal answers slower than twice its lowest latency of the last minute, so its queue stays short. The rest wait, one queue per organization: a free slot goes to the organization with the fewest calls in flight; an organization alone may use every slot. `BACKGROUND_CALLS_PER_ORGANIZATION` (a fixed share) is removed and refused at start ([performance.md](performance.md#fairness))",
  },
  INBOUND_MESSAGES_PER_ORGANIZATION: {
    description:
      "inbound messages one organization may have recorded at once in an API process while another organization's messages arrived within the last 2 s; the rest wait their turn in memory (answered when recorded); alone, no bound ([performance.md](performance.md#fairness))",
  },
  INBOUND_STARTS_WAITING_PER_ORGANIZATION: {
    description:
      "while another organization's messages arrived within the last 2 s and this many of an organization's Temporal starts wait for a slot among the API process's Temporal calls (`BACKGROUND_CALLS_IN_FLIGHT`; they wait only while Temporal is busy), its next inbound message waits to be recorded until one of them leaves: a flood is recorded as fast as its conversations start ([performance.md](performance.md#fairness))",
  },
  WORKER_ACTIVITY_SLOTS: {
    description: "activities the worker runs at once; tasks beyond the slots wait in the Temporal server's fair queues",
    default: "unset (the SDK's 100)",
  },
  WORKER_WORKFLOW_TASK_SLOTS: { description: 'workflow tasks the worker runs at once (a fixed count)', default: "unset (the SDK's 40)" },
  WORKER_TARGET_CPU: {
    description:
      "instead of a fixed count, the machine's CPU use (0–1, e.g. `0.8`) below which the worker takes more workflow tasks at once (8 at least): on a saturated machine it holds few, so another organization's conversation waits less behind a flood, at some cost to one organization's throughput ([performance.md](performance.md#fairness)); not with `WORKER_WORKFLOW_TASK_SLOTS`",
    default: 'unset (a fixed count)',
  },
  WORKER_EAGER_ACTIVITY_SLOTS: {
    description: 'activity slots reserved for eager dispatch per workflow task (`0` turns eager dispatch off)',
    default: "unset (the SDK's 3)",
  },
  WEBHOOK_ATTEMPT_MARGIN_MS: {
    description:
      "a webhook delivery's margin around its HTTP timeout (5 s when unset), from which its workflow task timeout follows; the crash test lowers it. Refused when `NODE_ENV=production`",
    testOnly: true,
  },
  TEMPORAL_CALL_TIMEOUT_MS: { description: 'longest a request waits on a Temporal start or signal (the reconciler does the rest)' },
  TEMPORAL_UI_PORT: { description: 'Web UI port of the local dev server' },
  TEMPORAL_UI_URL: {
    description:
      "the Temporal Web UI's address; set, execution, report, export, replay and dry-run responses carry `temporal_ui_url`, the run's page ([operators.md](operators.md))",
    default: 'unset (`npm start`: the local Web UI)',
  },
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: { description: 'allow webhook targets on loopback/private networks (tests, self-hosting)' },
  WEBHOOK_TIMEOUT_MS: { description: 'per-attempt webhook HTTP timeout' },
  WEBHOOK_EXTRA_CA_FILE: { description: 'PEM of extra CAs trusted for webhook targets (private PKI, tests)' },
  WEBHOOK_SECRET_OVERLAP_HOURS: { description: 'after `rotate-secret`, how long the old secret keeps signing beside the new one (fractions allowed)' },
  WEBHOOK_DISABLE_AFTER_HOURS: {
    description:
      'a webhook whose attempts have all failed this long (fractions allowed), with at least `WEBHOOK_DISABLE_MIN_ATTEMPTS` attempts, is disabled (`persistent_failure`, [webhooks.md](webhooks.md#disabling))',
  },
  WEBHOOK_DISABLE_MIN_ATTEMPTS: { description: 'see `WEBHOOK_DISABLE_AFTER_HOURS`' },
  WEBHOOK_RECOVERY_RATE_PER_SECOND: { description: 'deliveries a webhook recovery (`POST /v1/webhooks/{id}/recover`) starts per second' },
  WEBHOOK_RECOVERY_BATCHES_PER_RUN: { description: 'batches a recovery workflow runs before continuing as new' },
  EVENT_RETENTION_DAYS: { description: 'dispatched events older than this are deleted hourly by the worker (a redelivery needs its event)' },
  ANALYTICS_STREAM_INTERVAL_MS: { description: 'how often `GET /v1/analytics/realtime/stream` pushes the realtime object' },
  WEBHOOK_DISPATCH_POLL_MS: { description: 'event dispatcher poll interval when no NOTIFY arrives ([webhooks.md](webhooks.md))' },
  SIGNIN_ATTEMPTS_PER_EMAIL: { description: 'OAuth sign-in attempts per email address per 15 minutes' },
  SIGNIN_ATTEMPTS_PER_IP: { description: 'OAuth sign-in attempts per IP address per 15 minutes' },
  TRUST_PROXY: {
    description:
      'the proxies whose `X-Forwarded-For`/`-Proto`/`-Host` are believed: a hop count (`1`) or addresses and CIDR ranges (`10.0.0.0/8,loopback`; also `linklocal`, `uniquelocal`); unset, the per-IP sign-in limit counts the TCP peer. `true` is refused ([auth.md](auth.md#oauth-20-authorization-code))',
    default: 'unset (trust none)',
  },
  JWT_AUDIENCE: { description: 'the `aud` every JWT must carry', default: '`PUBLIC_BASE_URL`' },
  LOG_LEVEL: { description: 'log level of the JSON logs' },
  AUTH_CACHE_TTL_MS: {
    description: 'how long an API key, OAuth token or JWT application stays cached in-process; bounds how late a revocation bites',
  },
  SECRETS_ENCRYPTION_KEYS: {
    description:
      'the keyring sealing stored secrets (AES-256-GCM): `id:key` pairs, comma-separated, the sealing key first, e.g. `k2:<base64>,k1:<base64>` ' +
      '(32-byte keys, base64 or hex; ids of letters, digits, `-`, `_`). The API and the worker refuse to start without a key (except `npm start`, ' +
      'which generates one into `.data/`). `SECRETS_ENCRYPTION_KEYS_FILE` names a file holding it instead (a mounted secret; the compose stack\'s ' +
      'generated key). Rotation: [deploy.md](deploy.md#rotating-the-secrets-key), [guides/rotate-secrets.md](guides/rotate-secrets.md)',
  },
  SECRETS_ENCRYPTION_KEY: {
    description:
      'the one-key form, kept for compatibility: `SECRETS_ENCRYPTION_KEY=<key>` is the keyring `default:<key>`; set it or `SECRETS_ENCRYPTION_KEYS`, not both',
    default: 'generated by `npm start` into `.data/`',
  },
  META_GRAPH_API_URL: { description: 'Graph API base (with its version) of WhatsApp Cloud API connections and of Instagram connections with `login: facebook` ([channels.md](channels.md))' },
  INSTAGRAM_GRAPH_API_URL: { description: 'Graph API base (with its version) of Instagram connections with `login: instagram` ([channels.md](channels.md))' },
  TWILIO_API_URL: {
    description: 'Twilio REST API base: the `/test` of `twilio_voice` and `twilio_messaging` connections, and the sends of `twilio_messaging` (`Messages.json`) ([channels.md](channels.md#twilio-messaging-twilio_messaging))',
  },
  VOICE_ANSWER_BUDGET_MS: {
    description: 'how long a voice hook request waits for the execution\'s next wait before answering `<Pause length="1"/><Redirect>`',
  },
  CHANNEL_PROVIDER_URL: {
    description:
      'executions of organizations without a channel connection: also POST every outbound message here (HTTP channel adapter); unset = transcript only ([executions.md](executions.md))',
  },
  CHANNEL_PROVIDER_TIMEOUT_MS: { description: 'per-request timeout of the HTTP channel adapter' },
  AI_MODEL_URL: {
    description: 'OpenAI-compatible base URL (`…/v1`) that rewrites `ai_response` answers; unset = the retrieved article is the answer',
  },
  AI_MODEL_NAME: { description: 'model named in the chat completion requests' },
  AI_MODEL_API_KEY: { description: 'bearer key of the model requests' },
  AI_MODEL_TIMEOUT_MS: { description: 'timeout of a model request' },
  EXECUTION_RECONCILE_INTERVAL_MS: { description: 'how often the worker looks for committed executions whose Temporal start never happened' },
  EXECUTION_RECONCILE_GRACE_MS: { description: 'how old an unstarted execution must be before the reconciler starts it' },
  ACTIVITY_INFRA_RETRY_HOURS: {
    description: 'how long activities wait out an outage of our PostgreSQL/Redis before the execution fails ([outages.md](outages.md))',
  },
  METRICS_PORT: { description: 'a worker-only process serves `/metrics` (with the Temporal SDK\'s worker metrics), `/healthz` and `/readyz` (200 while the worker polls) on this port (the API serves its own)' },
  FILE_STORAGE: { description: 'where report and export files go: `local` (under `FILE_STORAGE_DIR`) or `s3` ([reports.md](reports.md))' },
  FILE_STORAGE_DIR: {
    description: 'local file storage root (API and worker must share it: **more than one replica needs `FILE_STORAGE=s3`**)',
  },
  S3_ENDPOINT: { description: 'S3-compatible storage endpoint; unset = AWS' },
  S3_BUCKET: { description: 'bucket of report and export files; required with `FILE_STORAGE=s3`' },
  S3_REGION: { description: 'S3 region' },
  S3_ACCESS_KEY_ID: { description: "S3 credentials; unset = the AWS SDK's default credential chain" },
  S3_SECRET_ACCESS_KEY: { description: "S3 credentials; unset = the AWS SDK's default credential chain" },
  S3_FORCE_PATH_STYLE: { description: 'path-style bucket addressing (MinIO and most S3-compatible servers)' },
  S3_PRESIGNED_DOWNLOAD_TTL_SECONDS: {
    description: 'S3 only: > 0 makes downloads answer 302 to a presigned URL valid this many seconds (`0` streams through the API)',
  },
  REPORT_RETENTION_DAYS: { description: 'report and export files are deleted (records marked `expired`) this long after completion' },
  REPLAY_BATCHES_PER_RUN: {
    description: 'bulk replays: batches a replay workflow runs before it continues as new ([replays.md](replays.md))',
  },
  FORM_TIMEOUT_MIN_SECONDS: {
    description:
      'lowers the shortest form `timeout_seconds` accepted, so tests wait seconds for a real form timeout; refused when `NODE_ENV=production`',
    default: 'unset (10)',
    testOnly: true,
  },
  MIGRATE_ON_START: {
    description:
      'the API and the worker apply pending migrations at start (several processes take turns on an advisory lock); `false` where a deploy step runs `npm run migrate` first',
  },
  IDEMPOTENCY_LEASE_MS: {
    description:
      'how long an `Idempotency-Key` claim holds without renewal; the request renews it while it runs. A retry of a request whose API died before its work committed runs after at most this long (409 `IDEMPOTENCY_KEY_IN_USE` until then); one whose work committed is answered from it at once, never run again',
  },
  CUSTOMER_SERVICE_WINDOW_SECONDS: {
    description:
      "shortens Meta's 24-hour customer service window, so tests see a form wait end at its close in seconds; refused when `NODE_ENV=production`",
    default: 'unset (86400)',
    testOnly: true,
  },
  FAILPOINTS: { description: 'crash points, comma-separated (the process SIGKILLs itself there); `name:0.3` dies there with that chance each time', testOnly: true },
  RATE_LIMIT_CREDENTIAL_PER_HOUR: { description: 'requests per hour of any one credential' },
  RATE_LIMIT_INBOUND_WEBHOOK_PER_MINUTE: { description: 'inbound webhook calls per minute' },
  RATE_LIMIT_RESOURCE_READ_PER_HOUR: { description: "workflow and trigger list/get per hour, their executions' list/get included" },
  RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: { description: 'workflow and trigger create/update per hour' },
  RATE_LIMIT_RESOURCE_DELETE_PER_HOUR: { description: 'workflow and trigger delete per hour' },
  RATE_LIMIT_EXECUTION_OPS_PER_HOUR: { description: 'execution operations per hour (messages, fire, retry, cancel, replays, dry runs)' },
  RATE_LIMIT_ANALYTICS_REALTIME_PER_HOUR: { description: 'analytics real-time metrics per hour' },
  RATE_LIMIT_ANALYTICS_HISTORICAL_PER_HOUR: { description: 'analytics historical metrics per hour' },
  RATE_LIMIT_ANALYTICS_REPORTS_PER_HOUR: { description: 'analytics custom reports per hour' },
  RATE_LIMIT_ANALYTICS_EXPORT_PER_HOUR: { description: 'analytics data exports per hour' },
};
