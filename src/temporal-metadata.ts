/**
 * Owns the user metadata of every workflow we start (`staticSummary`, `staticDetails`): what
 * an operator reads of a run in the Temporal UI list and on its page before any history.
 * The summary says what the run is in one line; the details list its ids and link back to
 * the API resource (BASE_URL). Customer external ids are masked to their last 4 characters.
 */
import type { Config } from './config';
import { executionSummary, staticDetails, summaryLine } from '../temporal/summaries.shared';

export interface WorkflowMetadata {
  staticSummary: string;
  staticDetails: string;
}

const api = (config: Pick<Config, 'BASE_URL'>, path: string) => `${config.BASE_URL}${path}`;

export function executionMetadata(
  config: Pick<Config, 'BASE_URL'>,
  e: {
    executionId: string;
    organizationId: string;
    workflowId: string;
    workflowName: string;
    revision: number;
    channel: string;
    customerId: string | null;
    customerExternalId?: string | null;
    triggerId?: string | null;
  },
): WorkflowMetadata {
  return {
    staticSummary: executionSummary(e),
    staticDetails: staticDetails(
      [
        ['Execution', e.executionId],
        ['Workflow', `${e.workflowId} (rev ${e.revision})`],
        ['Organization', e.organizationId],
        ['Customer', e.customerId],
        ['Trigger', e.triggerId],
      ],
      api(config, `/v1/workflows/${e.workflowId}/executions/${e.executionId}`),
    ),
  };
}

/** Background jobs (starts/job-starts.ts): exports, reports, replays, dry runs. */
export function jobMetadata(
  config: Pick<Config, 'BASE_URL'>,
  kind: 'export' | 'report' | 'replay' | 'dry_run' | 'webhook_recovery',
  row: { id: string; organization_id: string; workflow_id?: string; webhook_id?: string },
): WorkflowMetadata {
  const ids: Array<[string, string | undefined]> = [
    [{ export: 'Export', report: 'Report', replay: 'Replay', dry_run: 'Dry run', webhook_recovery: 'Webhook recovery' }[kind], row.id],
    ['Organization', row.organization_id],
    ['Workflow', row.workflow_id],
    ['Webhook', row.webhook_id],
  ];
  const path = {
    export: `/v1/analytics/export/${row.id}`,
    report: `/v1/analytics/reports/${row.id}`,
    replay: `/v1/replays/${row.id}`,
    dry_run: `/v1/workflows/${row.workflow_id}/dry-runs/${row.id}`,
    webhook_recovery: `/v1/webhooks/${row.webhook_id}/recoveries/${row.id}`,
  }[kind];
  const summary = {
    export: summaryLine('analytics export', row.id),
    report: summaryLine('analytics report', row.id),
    replay: summaryLine('bulk replay', row.id),
    dry_run: summaryLine('dry run', row.id, row.workflow_id && `workflow ${row.workflow_id}`),
    webhook_recovery: summaryLine('webhook recovery', row.id, row.webhook_id && `of ${row.webhook_id}`),
  }[kind];
  return { staticSummary: summary, staticDetails: staticDetails(ids, api(config, path)) };
}

export function webhookDeliveryMetadata(
  config: Pick<Config, 'BASE_URL'>,
  d: { eventId: string; eventType: string; webhookId: string; organizationId: string; redelivery?: boolean },
): WorkflowMetadata {
  return {
    staticSummary: summaryLine(d.redelivery ? 'webhook redelivery' : 'webhook delivery', d.eventType, `to ${d.webhookId}`),
    staticDetails: staticDetails(
      [
        ['Event', `${d.eventId} (${d.eventType})`],
        ['Webhook', d.webhookId],
        ['Organization', d.organizationId],
      ],
      api(config, `/v1/webhooks/${d.webhookId}/logs`),
    ),
  };
}

export function scheduledTriggerMetadata(
  config: Pick<Config, 'BASE_URL'>,
  t: { triggerId: string; triggerName: string; workflowId: string; workflowName: string; organizationId: string; channel: string },
): WorkflowMetadata {
  return {
    staticSummary: summaryLine(`schedule ${t.triggerName}`, `runs ${t.workflowName}`, t.channel),
    staticDetails: staticDetails(
      [
        ['Trigger', t.triggerId],
        ['Workflow', t.workflowId],
        ['Organization', t.organizationId],
      ],
      api(config, `/v1/triggers/${t.triggerId}`),
    ),
  };
}

export function fileExpiryMetadata(config: Pick<Config, 'BASE_URL'>): WorkflowMetadata {
  return {
    staticSummary: 'expire report and export files past their retention',
    staticDetails: staticDetails([], api(config, '/v1/analytics/reports')),
  };
}
