/**
 * Registers the background jobs an API call records as durable starts (durable-start.ts):
 * exports, reports, replays and dry runs. Each job's workflow id is derived from its row id,
 * and a second start of it while it runs is refused (conflict policy FAIL), so a start that
 * races the reconciler, or is repeated after a crash, runs the job once.
 */
import type { SearchAttributePair } from '@temporalio/common';
import type { Services } from '../../services';
import { SearchAttributeKeys } from '../../../temporal/shared';
import { EXPORT_WORKFLOW_TYPE, exportWorkflowId, REPORT_WORKFLOW_TYPE, reportWorkflowId, type FileJobInput } from '../../../temporal/reports.shared';
import { REPLAY_WORKFLOW_TYPE, replayWorkflowId, type ReplayWorkflowInput } from '../../../temporal/replays.shared';
import { DRY_RUN_WORKFLOW_TYPE, dryRunWorkflowId, type DryRunWorkflowInput } from '../../../temporal/dry-runs.shared';
import { jobMetadata } from '../../temporal-metadata';
import { organizationPriority } from '../../../temporal/fairness.shared';
import { WEBHOOK_RECOVERY_WORKFLOW_TYPE, webhookRecoveryWorkflowId, type WebhookRecoveryWorkflowInput } from '../../../temporal/webhook-recoveries.shared';
import { claimOneSql, type StartKind } from './durable-start';

type JobMetadataKind = Parameters<typeof jobMetadata>[1];

/** The columns every job table has, and those one kind's input or search attributes need. */
export interface JobRow {
  id: string;
  organization_id: string;
  rate_per_second?: number;
  workflow_id?: string;
  webhook_id?: string;
}

/** A job table's unconfirmed starts: its `status` is `activeStatus` until the workflow ends it. */
const claimUnstartedJob = (table: StartKind<JobRow>['table'], activeStatus: string) =>
  claimOneSql(table, `status = '${activeStatus}' and temporal_started_at is null and created_at < now() - (? * interval '1 millisecond')`, 'created_at');

function jobKind(k: {
  table: StartKind<JobRow>['table'];
  activeStatus: string;
  workflowType: string;
  workflowId: (id: string) => string;
  /** The workflow's input, rebuilt from the committed row so the reconciler needs nothing else. */
  input: (row: JobRow, services: Services) => FileJobInput | ReplayWorkflowInput | DryRunWorkflowInput | WebhookRecoveryWorkflowInput;
  /** Its summary and details in the Temporal UI (temporal-metadata.ts). */
  metadata: JobMetadataKind;
  /** What finds the job's run in the Temporal UI, besides the organization. */
  searchAttributes?: (row: JobRow) => SearchAttributePair[];
}): StartKind<JobRow> {
  return {
    table: k.table,
    workflowType: k.workflowType,
    workflowId: k.workflowId,
    // A second start of the same job finds the first run, open or closed, and leaves it be.
    conflictPolicy: 'FAIL',
    idOf: (row) => row.id,
    options: (row, services) => ({
      args: [k.input(row, services)],
      searchAttributes: [{ key: SearchAttributeKeys.organizationId, value: row.organization_id }, ...(k.searchAttributes?.(row) ?? [])],
      ...jobMetadata(services.config, k.metadata, row),
      priority: organizationPriority(row.organization_id),
    }),
    claimSql: claimUnstartedJob(k.table, k.activeStatus),
    fromRow: (row: JobRow) => row,
  };
}

const fileJobInput = (row: JobRow): FileJobInput => ({ organizationId: row.organization_id, id: row.id });

export const JOBS = {
  export: jobKind({
    metadata: 'export',
    table: 'exports',
    activeStatus: 'processing',
    workflowType: EXPORT_WORKFLOW_TYPE,
    workflowId: exportWorkflowId,
    input: fileJobInput,
    searchAttributes: (row) => [{ key: SearchAttributeKeys.exportId, value: row.id }],
  }),
  report: jobKind({
    metadata: 'report',
    table: 'reports',
    activeStatus: 'generating',
    workflowType: REPORT_WORKFLOW_TYPE,
    workflowId: reportWorkflowId,
    input: fileJobInput,
    searchAttributes: (row) => [{ key: SearchAttributeKeys.reportId, value: row.id }],
  }),
  replay: jobKind({
    metadata: 'replay',
    table: 'replays',
    activeStatus: 'running',
    workflowType: REPLAY_WORKFLOW_TYPE,
    workflowId: replayWorkflowId,
    input: (row, services): ReplayWorkflowInput => ({
      replayId: row.id,
      organizationId: row.organization_id,
      ratePerSecond: row.rate_per_second!,
      batchesPerRun: services.config.REPLAY_BATCHES_PER_RUN,
    }),
  }),
  dryRun: jobKind({
    metadata: 'dry_run',
    table: 'dry_runs',
    activeStatus: 'pending',
    workflowType: DRY_RUN_WORKFLOW_TYPE,
    workflowId: dryRunWorkflowId,
    input: (row): DryRunWorkflowInput => ({ dryRunId: row.id }),
    searchAttributes: (row) => [{ key: SearchAttributeKeys.workflowId, value: row.workflow_id! }],
  }),
  webhookRecovery: jobKind({
    metadata: 'webhook_recovery',
    table: 'webhook_recoveries',
    activeStatus: 'running',
    workflowType: WEBHOOK_RECOVERY_WORKFLOW_TYPE,
    workflowId: webhookRecoveryWorkflowId,
    input: (row, services): WebhookRecoveryWorkflowInput => ({
      recoveryId: row.id,
      organizationId: row.organization_id,
      ratePerSecond: services.config.WEBHOOK_RECOVERY_RATE_PER_SECOND,
      batchesPerRun: services.config.WEBHOOK_RECOVERY_BATCHES_PER_RUN,
    }),
  }),
};
