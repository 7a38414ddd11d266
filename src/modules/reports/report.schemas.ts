/** The In / Out shapes of custom reports, and their validation codes. */
import type { IssueClassifier } from '../../http/validation';
import { isoDateTime } from '../../http/validation';
import { z } from '../../http/zod';
import { TemporalUiUrlOut } from '../../temporal-ui';
import { AnalyticsMetricsOut } from '../analytics/analytics.schemas';
import { ChannelsFilter, ErrorDetail, WorkflowIdsFilter } from '../files/file-records.schemas';
import { GRANULARITIES } from '../metrics/execution-metrics';
import { DESCRIPTION_MAX, NAME_MAX } from '../workflows/workflow.schemas';
import { REPORT_GROUP_BY, REPORT_METRICS } from './report.data';

export const ReportIn = z
  .strictObject({
    name: z.string().trim().min(1).max(NAME_MAX),
    description: z.string().max(DESCRIPTION_MAX).optional(),
    metrics: z
      .array(z.enum(REPORT_METRICS, { error: (issue) => `unknown metric ${JSON.stringify(issue.input)}; accepted: ${REPORT_METRICS.join(', ')}` }))
      .min(1)
      .max(REPORT_METRICS.length)
      .openapi({ description: `Any of the metrics of workflow analytics: ${REPORT_METRICS.join(', ')}` }),
    filters: z
      .strictObject({
        start_date: isoDateTime.optional().openapi({ description: 'Default: 30 days before end_date' }),
        end_date: isoDateTime.optional().openapi({ description: 'Default: now' }),
        workflow_ids: WorkflowIdsFilter.optional(),
        channels: ChannelsFilter.optional(),
      })
      .default({}),
    group_by: z.array(z.enum(REPORT_GROUP_BY)).max(2).default([]),
    granularity: z.enum(GRANULARITIES).default('day'),
    format: z.enum(['csv', 'json', 'pdf']).default('csv'),
  })
  .openapi('ReportRequest');

/** The file of a `json` report (docs/reports.md). */
export const ReportFileOut = z
  .object({
    report_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    generated_at: z.string(),
    metrics: z.array(z.enum(REPORT_METRICS)),
    filters: z.record(z.string(), z.unknown()),
    group_by: z.array(z.enum(REPORT_GROUP_BY)),
    period: z.object({ start_date: z.string(), end_date: z.string() }),
    granularity: z.enum(GRANULARITIES),
    groups: z.array(
      z.object({
        workflow_id: z.string().optional(),
        workflow_name: z.string().optional(),
        channel: z.string().optional(),
        metrics: AnalyticsMetricsOut,
        series: z.array(
          z.object({
            date: z.string(),
            executions: z.number().int(),
            success_rate: z.number(),
            average_duration_ms: z.number(),
            messages_sent: z.number().int(),
            messages_received: z.number().int(),
            unique_customers: z.number().int(),
          }),
        ),
      }),
    ),
  })
  .openapi('ReportFile');

/** Unknown metrics are 400 INVALID_METRICS, an unknown granularity 422 INVALID_GRANULARITY (contract codes). */
export const classifyReportIssue: IssueClassifier = ({ path, missing }) => {
  if (path[0] === 'metrics' && !missing) return { status: 400, code: 'INVALID_METRICS' };
  if (path[0] === 'granularity' && !missing) return { status: 422, code: 'INVALID_GRANULARITY' };
  return undefined;
};

export const ReportParams = z.strictObject({ report_id: z.string().max(64) });

export const ReportOut = z
  .object({
    report_id: z.string(),
    temporal_ui_url: TemporalUiUrlOut,
    name: z.string(),
    description: z.string().nullable(),
    format: z.enum(['csv', 'json', 'pdf']),
    status: z.enum(['generating', 'completed', 'failed', 'expired']),
    created_at: z.string(),
    estimated_completion: z.string().nullable().openapi({ description: 'While generating' }),
    completed_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    download_url: z.string(),
    error: ErrorDetail.nullable().openapi({ description: '`REPORT_GENERATION_FAILED` when failed' }),
  })
  .openapi('Report');
