import { Migration } from '@mikro-orm/migrations';

/**
 * Two partial indexes for the window-closed failures of GET /v1/analytics/workflows/{id}/performance
 * (failed `api_error` executions with a failed step of error type
 * `customer_service_window_closed`; the rollups keep only the execution's own error type).
 * That count scanned every execution of the workflow in the period and probed its steps:
 * 160 ms over 30 days and 400 ms over a year at 2 M executions, most of the request.
 * Now it reads either the organization's window-closed steps or the workflow's failed
 * `api_error` executions of the period, whichever the planner finds smaller. Only those rows
 * pay for the indexes on write.
 */
export class Migration20261222000100_window_closed_indexes extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create index executions_api_failures_idx on executions (organization_id, workflow_id, started_at) include (id)
        where status = 'failed' and error_type = 'api_error';
      create index execution_steps_window_closed_idx on execution_steps (organization_id, execution_id)
        where status = 'failed' and error_type = 'customer_service_window_closed';
    `);
  }
}
