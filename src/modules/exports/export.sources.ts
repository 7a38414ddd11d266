/**
 * Owns what each export `data_type` reads: its columns, its organization-scoped SQL (date
 * range on the type's own time column, workflow and channel filters) and a deterministic
 * order (time, then id), so a retried export writes the same rows in the same order.
 * Timestamps are formatted by PostgreSQL (ISO 8601, UTC) so rows stream straight into the
 * renderers. `workflow_metrics` is not a table: it is computed by report.data.ts (src/modules/reports).
 */
import { invalid } from '../../errors';

export const EXPORT_DATA_TYPES = ['workflow_metrics', 'executions', 'steps', 'messages', 'customers', 'trigger_executions', 'webhook_logs'] as const;
export type ExportDataType = (typeof EXPORT_DATA_TYPES)[number];
export type TableDataType = Exclude<ExportDataType, 'workflow_metrics'>;

export interface ExportFilters {
  from?: Date;
  to?: Date;
  workflowIds?: string[];
  channels?: string[];
}

export interface SqlQuery {
  text: string;
  values: unknown[];
}

/** Every source reads its data type's table as `t`, scoped by `t.organization_id` and ordered last by `t.id`. */
interface Source {
  /** `[column name in the file, SQL expression]` in file order. */
  columns: Column[];
  from: string;
  time: string;
  /** A predicate builder for `workflow_ids` given its parameter, or null when the type has no workflow. */
  workflow: ((param: string) => string) | null;
  channel: string | null;
}

type Column = [name: string, expr: string];

const iso = (expr: string) => `to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** Columns of `t` written as they are, under their own names. */
const own = (...names: string[]): Column[] => names.map((name) => [name, `t.${name}`]);
/** A timestamp column of `t`, written as ISO 8601 UTC text. */
const at = (name: string): Column => [name, iso(`t.${name}`)];

/** How a run ended: executions and their steps have the same columns for it. */
const OUTCOME: Column[] = [...own('status'), at('started_at'), at('completed_at'), ...own('duration_ms', 'error_type', 'error_message')];

const SOURCES: Record<TableDataType, Source> = {
  executions: {
    columns: [...own('id', 'workflow_id', 'revision', 'trigger_id', 'customer_id', 'channel'), ...OUTCOME, ...own('retry_of')],
    from: 'executions t',
    time: 't.started_at',
    workflow: (p) => `t.workflow_id = any(${p})`,
    channel: 't.channel',
  },
  steps: {
    columns: [...own('id', 'execution_id'), ['workflow_id', 'e.workflow_id'], ...own('node_id', 'type'), ...OUTCOME],
    from: 'execution_steps t join executions e on e.id = t.execution_id',
    time: 't.started_at',
    workflow: (p) => `e.workflow_id = any(${p})`,
    channel: 'e.channel',
  },
  messages: {
    columns: [...own('id', 'customer_id', 'channel', 'direction', 'text', 'execution_id'), ['workflow_id', 'e.workflow_id'], ...own('node_id'), at('created_at')],
    from: 'messages t left join executions e on e.id = t.execution_id',
    time: 't.created_at',
    workflow: (p) => `e.workflow_id = any(${p})`,
    channel: 't.channel',
  },
  customers: {
    columns: [...own('id', 'channel', 'external_id', 'name', 'message_count'), at('first_seen_at'), at('last_message_at'), at('created_at')],
    from: 'customers t',
    time: 't.created_at',
    // A customer belongs to a workflow's audience when that workflow ran for them.
    workflow: (p) => `exists (select 1 from executions e where e.customer_id = t.id and e.workflow_id = any(${p}))`,
    channel: 't.channel',
  },
  trigger_executions: {
    // Status and completion come from the linked execution at read time, as the trigger
    // executions endpoint reports them (a cancelled execution reads as failed).
    columns: [
      ...own('id', 'trigger_id', 'workflow_id', 'execution_id', 'customer_id', 'channel'),
      ['status', `case when t.status = 'failed' or e.status in ('failed', 'cancelled') then 'failed' when e.status = 'success' then 'success' else 'running' end`],
      ...own('error_code'),
      ['error_message', 'coalesce(t.error_message, e.error_message)'],
      at('triggered_at'),
      ['completed_at', iso('coalesce(e.completed_at, t.completed_at)')],
    ],
    from: 'trigger_executions t left join executions e on e.id = t.execution_id',
    time: 't.triggered_at',
    workflow: (p) => `t.workflow_id = any(${p})`,
    channel: 't.channel',
  },
  webhook_logs: {
    columns: [...own('id', 'webhook_id', 'event_id', 'event_type', 'status', 'response_code', 'response_time_ms', 'attempt'), at('delivered_at'), ...own('error_message')],
    from: 'webhook_logs t',
    time: 't.delivered_at',
    workflow: null,
    channel: null,
  },
};

/** Rejects filters a data type cannot apply (400 with the field), before anything is recorded. */
export function checkFiltersApply(dataType: ExportDataType, f: ExportFilters): void {
  if (dataType === 'workflow_metrics') return;
  const source = SOURCES[dataType];
  if (!source.workflow && f.workflowIds?.length) throw invalid(`${dataType} cannot be filtered by workflow`, 'filters.workflow_ids');
  if (!source.channel && f.channels?.length) throw invalid(`${dataType} cannot be filtered by channel`, 'filters.channels');
}

export function exportColumns(dataType: TableDataType): string[] {
  return SOURCES[dataType].columns.map(([name]) => name);
}

function where(source: Source, organizationId: string, f: ExportFilters): SqlQuery {
  const values: unknown[] = [organizationId];
  const conditions = ['t.organization_id = $1'];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (f.from) conditions.push(`${source.time} >= ${param(f.from)}`);
  if (f.to) conditions.push(`${source.time} < ${param(f.to)}`);
  if (f.workflowIds?.length && source.workflow) conditions.push(source.workflow(param(f.workflowIds)));
  if (f.channels?.length && source.channel) conditions.push(`${source.channel} = any(${param(f.channels)})`);
  return { text: `from ${source.from} where ${conditions.join(' and ')}`, values };
}

/** The rows of an export, in file order. Every row is an array in `exportColumns` order. */
export function exportRowsQuery(dataType: TableDataType, organizationId: string, f: ExportFilters): SqlQuery {
  const source = SOURCES[dataType];
  const w = where(source, organizationId, f);
  const select = source.columns.map(([name, expr]) => `${expr} as "${name}"`).join(', ');
  return { text: `select ${select} ${w.text} order by ${source.time}, t.id`, values: w.values };
}

export function exportCountQuery(dataType: TableDataType, organizationId: string, f: ExportFilters): SqlQuery {
  const w = where(SOURCES[dataType], organizationId, f);
  return { text: `select count(*)::int as n ${w.text}`, values: w.values };
}
