/**
 * Owns the Temporal starts of the background jobs an API call records: exports, reports,
 * replays and dry runs. Like executions (execution.starter.ts), a job is committed first and its workflow
 * started after, never inside the transaction: a Temporal outage delays the job instead of
 * refusing it, and the worker's reconciler starts every job whose start was never confirmed
 * (`temporal_started_at` still null). The workflow ids are derived from the job ids, so a
 * start that races the reconciler, or is repeated after a crash, runs the job once.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { TypedSearchAttributes, type SearchAttributePair } from '@temporalio/common';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Services } from '../../services';
import { SearchAttributeKeys } from '../../../temporal/shared';
import { EXPORT_WORKFLOW_TYPE, exportWorkflowId, REPORT_WORKFLOW_TYPE, reportWorkflowId, type FileJobInput } from '../../../temporal/reports.shared';
import { REPLAY_WORKFLOW_TYPE, replayWorkflowId, type ReplayWorkflowInput } from '../../../temporal/replays.shared';
import { DRY_RUN_WORKFLOW_TYPE, dryRunWorkflowId, type DryRunWorkflowInput } from '../../../temporal/dry-runs.shared';
import { boundedTemporalCall, RECONCILE_TEMPORAL_TIMEOUT_MS } from '../../temporal-calls';
import { jobMetadata } from '../../temporal-metadata';

type JobMetadataKind = Parameters<typeof jobMetadata>[1];

/** The columns every job table has, and those one kind's input or search attributes need. */
interface JobRow {
  id: string;
  organization_id: string;
  rate_per_second?: number;
  workflow_id?: string;
}

interface JobKind {
  /** The job's table; its `status` is `activeStatus` until the workflow ends it. */
  table: 'exports' | 'reports' | 'replays' | 'dry_runs';
  activeStatus: string;
  workflowType: string;
  workflowId: (id: string) => string;
  /** The workflow's input, rebuilt from the committed row so the reconciler needs nothing else. */
  input: (row: JobRow, services: Services) => FileJobInput | ReplayWorkflowInput | DryRunWorkflowInput;
  /** Its summary and details in the Temporal UI (temporal-metadata.ts). */
  metadata: JobMetadataKind;
  /** What finds the job's run in the Temporal UI, besides the organization. */
  searchAttributes?: (row: JobRow) => SearchAttributePair[];
}

const fileJobInput = (row: JobRow): FileJobInput => ({ organizationId: row.organization_id, id: row.id });

export const JOBS = {
  export: {
    metadata: 'export',
    table: 'exports',
    activeStatus: 'processing',
    workflowType: EXPORT_WORKFLOW_TYPE,
    workflowId: exportWorkflowId,
    input: fileJobInput,
    searchAttributes: (row) => [{ key: SearchAttributeKeys.exportId, value: row.id }],
  },
  report: {
    metadata: 'report',
    table: 'reports',
    activeStatus: 'generating',
    workflowType: REPORT_WORKFLOW_TYPE,
    workflowId: reportWorkflowId,
    input: fileJobInput,
    searchAttributes: (row) => [{ key: SearchAttributeKeys.reportId, value: row.id }],
  },
  replay: {
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
  },
  dryRun: {
    metadata: 'dry_run',
    table: 'dry_runs',
    activeStatus: 'pending',
    workflowType: DRY_RUN_WORKFLOW_TYPE,
    workflowId: dryRunWorkflowId,
    input: (row): DryRunWorkflowInput => ({ dryRunId: row.id }),
    searchAttributes: (row) => [{ key: SearchAttributeKeys.workflowId, value: row.workflow_id! }],
  },
} satisfies Record<string, JobKind>;

/**
 * Starts the workflow of a committed job and stamps its row. Never throws for a Temporal
 * outage (nor waits on one longer than TEMPORAL_CALL_TIMEOUT_MS): the row stays unstamped
 * and the reconciler starts it later. Returns whether the start is confirmed.
 */
export async function dispatchJob(
  services: Services,
  kind: JobKind,
  row: JobRow,
  em: EntityManager = services.orm.em.fork() as EntityManager,
  timeoutMs?: number,
): Promise<boolean> {
  const pairs: SearchAttributePair[] = [{ key: SearchAttributeKeys.organizationId, value: row.organization_id }, ...(kind.searchAttributes?.(row) ?? [])];
  const started = await boundedTemporalCall(
    services,
    () =>
      services.temporal.client.workflow.start(kind.workflowType, {
        taskQueue: services.config.TEMPORAL_TASK_QUEUE,
        workflowId: kind.workflowId(row.id),
        args: [kind.input(row, services)],
        // A second start of the same job (a racing reconciler, a retry after a crash) finds
        // the first run, open or closed, and leaves it be.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
        typedSearchAttributes: new TypedSearchAttributes(pairs),
        ...jobMetadata(services.config, kind.metadata, row),
      }),
    (err) => err instanceof WorkflowExecutionAlreadyStartedError,
    timeoutMs,
  );
  if (!started) return false;
  await em.execute(`update ${kind.table} set temporal_started_at = now() where id = ? and temporal_started_at is null`, [row.id]);
  return true;
}

/**
 * Starts every active job whose start was never confirmed and that is older than `graceMs`
 * (so it does not race the API's own attempt). Rows are claimed with SKIP LOCKED so several
 * workers share the work. Returns how many starts it confirmed.
 */
export async function reconcileJobs(services: Services, opts: { graceMs: number; batch?: number }): Promise<number> {
  let confirmed = 0;
  for (const kind of Object.values(JOBS) as JobKind[]) {
    const em = services.orm.em.fork() as EntityManager;
    await em.transactional(async (tx) => {
      const rows = await tx.execute<JobRow[]>(
        `select * from ${kind.table}
          where status = ? and temporal_started_at is null and created_at < now() - (? * interval '1 millisecond')
          order by created_at limit ? for update skip locked`,
        [kind.activeStatus, opts.graceMs, opts.batch ?? 100],
      );
      for (const row of rows) {
        if (await dispatchJob(services, kind, row, tx as EntityManager, RECONCILE_TEMPORAL_TIMEOUT_MS)) confirmed++;
      }
    });
  }
  return confirmed;
}
