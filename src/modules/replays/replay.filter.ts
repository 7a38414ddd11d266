/**
 * Owns which executions a replay matches, as SQL shared by the count at creation and the
 * batches of the replay workflow. Only executions started before the replay's `cutoff`
 * (its creation) match, so the replay's own retries, or failures that happen meanwhile,
 * never feed it. Order: (started_at, id), the keyset of the batches.
 */
import { dateFilter } from '../metrics/execution-metrics';
import type { ReplayFilter } from './replay.schemas';

export function matchingExecutionsSql(organizationId: string, cutoff: string, f: ReplayFilter): { where: string; params: unknown[] } {
  const clauses = ['e.organization_id = ?', 'e.started_at < ?::timestamptz'];
  const params: unknown[] = [organizationId, cutoff];
  const add = (clause: string, value: unknown) => {
    clauses.push(clause);
    params.push(value);
  };
  if (f.workflow_id) add('e.workflow_id = ?', f.workflow_id);
  if (f.trigger_id) add('e.trigger_id = ?', f.trigger_id);
  if (f.error_type) add('e.error_type = ?', f.error_type);
  const { from, to } = dateFilter(f.start_date, f.end_date);
  if (from) add('e.started_at >= ?', from);
  if (to) add('e.started_at < ?', to);
  if (f.status) add('e.status = ?', f.status);
  // Named executions of any status match (and are skipped); a plain filter only sees retryable ones.
  else if (!f.execution_ids) clauses.push(`e.status in ('failed', 'cancelled')`);
  if (f.execution_ids) add('e.id in (select jsonb_array_elements_text(?::jsonb))', JSON.stringify(f.execution_ids));
  return { where: clauses.join(' and '), params };
}
