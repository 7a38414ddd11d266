/**
 * The committed migrations, in order. Listed explicitly (instead of a folder glob) so
 * they load the same way under tsx, jest and a compiled build. New migrations go last.
 */
import { Migration20261122000001_foundation } from './Migration20261122000001_foundation';
import { Migration20261122000002_events } from './Migration20261122000002_events';
import { Migration20261122000300_executions } from './Migration20261122000300_executions';
import { Migration20261122000500_webhooks } from './Migration20261122000500_webhooks';
import { Migration20261122000400_triggers } from './Migration20261122000400_triggers';
import { Migration20261123000100_reply_waits } from './Migration20261123000100_reply_waits';
import { Migration20261124000100_temporal_cancels } from './Migration20261124000100_temporal_cancels';
import { Migration20261125000200_analytics } from './Migration20261125000200_analytics';
import { Migration20261125000300_applications } from './Migration20261125000300_applications';
import { Migration20261125000300_users } from './Migration20261125000300_users';
import { Migration20261125000300_oauth } from './Migration20261125000300_oauth';
import { Migration20261125000100_provider_message_ids } from './Migration20261125000100_provider_message_ids';
import { Migration20261125000400_reports_exports } from './Migration20261125000400_reports_exports';
import { Migration20261125000500_replays } from './Migration20261125000500_replays';
import { Migration20261126000100_job_starts } from './Migration20261126000100_job_starts';
import { Migration20261126000200_dry_runs } from './Migration20261126000200_dry_runs';
import { Migration20261127000100_deferred_rollups } from './Migration20261127000100_deferred_rollups';
import { Migration20261128000100_deferred_counters } from './Migration20261128000100_deferred_counters';
import { Migration20261129000100_sharded_rollups } from './Migration20261129000100_sharded_rollups';
import { Migration20261129000200_throttled_event_notify } from './Migration20261129000200_throttled_event_notify';
import { Migration20261130000200_message_target_versions } from './Migration20261130000200_message_target_versions';
import { Migration20261201000100_application_require_jti } from './Migration20261201000100_application_require_jti';
import { Migration20261201000200_export_generated_at } from './Migration20261201000200_export_generated_at';
import { Migration20261202000100_execution_resets } from './Migration20261202000100_execution_resets';
import { Migration20261202000100_webhook_secret_rotation } from './Migration20261202000100_webhook_secret_rotation';
import { Migration20261202000200_webhook_disabling } from './Migration20261202000200_webhook_disabling';
import { Migration20261204000100_rollup_functions } from './Migration20261204000100_rollup_functions';
import { Migration20261207000100_channels } from './Migration20261207000100_channels';
import { Migration20261208000100_idempotency_leases } from './Migration20261208000100_idempotency_leases';
import { Migration20261206000100_webhook_recoveries } from './Migration20261206000100_webhook_recoveries';
import { Migration20261209000100_daily_rollups } from './Migration20261209000100_daily_rollups';
import { Migration20261210000100_voice_calls } from './Migration20261210000100_voice_calls';
import { Migration20261211000100_execution_concurrency } from './Migration20261211000100_execution_concurrency';
import { Migration20261212000100_sealed_webhook_trigger_secrets } from './Migration20261212000100_sealed_webhook_trigger_secrets';

export const migrationsList = [
  { name: 'Migration20261122000001_foundation', class: Migration20261122000001_foundation },
  { name: 'Migration20261122000002_events', class: Migration20261122000002_events },
  { name: 'Migration20261122000300_executions', class: Migration20261122000300_executions },
  { name: 'Migration20261122000500_webhooks', class: Migration20261122000500_webhooks },
  { name: 'Migration20261122000400_triggers', class: Migration20261122000400_triggers },
  { name: 'Migration20261123000100_reply_waits', class: Migration20261123000100_reply_waits },
  { name: 'Migration20261124000100_temporal_cancels', class: Migration20261124000100_temporal_cancels },
  { name: 'Migration20261125000200_analytics', class: Migration20261125000200_analytics },
  { name: 'Migration20261125000300_applications', class: Migration20261125000300_applications },
  { name: 'Migration20261125000300_users', class: Migration20261125000300_users },
  { name: 'Migration20261125000300_oauth', class: Migration20261125000300_oauth },
  { name: 'Migration20261125000100_provider_message_ids', class: Migration20261125000100_provider_message_ids },
  { name: 'Migration20261125000400_reports_exports', class: Migration20261125000400_reports_exports },
  { name: 'Migration20261125000500_replays', class: Migration20261125000500_replays },
  { name: 'Migration20261126000100_job_starts', class: Migration20261126000100_job_starts },
  { name: 'Migration20261126000200_dry_runs', class: Migration20261126000200_dry_runs },
  { name: 'Migration20261127000100_deferred_rollups', class: Migration20261127000100_deferred_rollups },
  { name: 'Migration20261128000100_deferred_counters', class: Migration20261128000100_deferred_counters },
  { name: 'Migration20261129000100_sharded_rollups', class: Migration20261129000100_sharded_rollups },
  { name: 'Migration20261129000200_throttled_event_notify', class: Migration20261129000200_throttled_event_notify },
  { name: 'Migration20261130000200_message_target_versions', class: Migration20261130000200_message_target_versions },
  { name: 'Migration20261201000100_application_require_jti', class: Migration20261201000100_application_require_jti },
  { name: 'Migration20261201000200_export_generated_at', class: Migration20261201000200_export_generated_at },
  { name: 'Migration20261202000100_execution_resets', class: Migration20261202000100_execution_resets },
  { name: 'Migration20261202000100_webhook_secret_rotation', class: Migration20261202000100_webhook_secret_rotation },
  { name: 'Migration20261202000200_webhook_disabling', class: Migration20261202000200_webhook_disabling },
  { name: 'Migration20261204000100_rollup_functions', class: Migration20261204000100_rollup_functions },
  { name: 'Migration20261207000100_channels', class: Migration20261207000100_channels },
  { name: 'Migration20261208000100_idempotency_leases', class: Migration20261208000100_idempotency_leases },
  { name: 'Migration20261206000100_webhook_recoveries', class: Migration20261206000100_webhook_recoveries },
  { name: 'Migration20261209000100_daily_rollups', class: Migration20261209000100_daily_rollups },
  { name: 'Migration20261210000100_voice_calls', class: Migration20261210000100_voice_calls },
  { name: 'Migration20261211000100_execution_concurrency', class: Migration20261211000100_execution_concurrency },
  { name: 'Migration20261212000100_sealed_webhook_trigger_secrets', class: Migration20261212000100_sealed_webhook_trigger_secrets },
];
