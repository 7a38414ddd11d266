/** The dry-run endpoints of a workflow: create, list, get. */
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { classifyWorkflowIssue, WorkflowIdParams } from '../workflows/workflow.schemas';
import { DryRunDetailOut, DryRunIn, DryRunListQuery, DryRunOut, DryRunParams } from './dry-run.schemas';
import { DryRunService } from './dry-run.service';

const WORKFLOW_NOT_FOUND: [number, string] = [404, 'WORKFLOW_NOT_FOUND'];

export function dryRunRoutes(services: Services): AnyRoute[] {
  const svc = new DryRunService(services);
  const tag = 'Dry runs';
  return [
    defineRoute({
      method: 'post',
      path: '/v1/workflows/{workflow_id}/dry-runs',
      operationId: 'createDryRun',
      summary: 'Replay recorded executions against a draft or a saved revision, with no side effects, and diff them',
      description:
        'Nothing is sent to customers, no webhook event is emitted, and nothing counts in metrics or analytics. ' +
        'The result (GET) compares each execution step by step with its dry run.',
      tag,
      scope: 'workflows:write',
      limits: ['execution_ops'],
      params: WorkflowIdParams,
      body: DryRunIn,
      classify: classifyWorkflowIssue,
      status: 201,
      response: z.object({ data: DryRunDetailOut }),
      errors: [
        [404, 'WORKFLOW_NOT_FOUND | EXECUTION_NOT_FOUND | REVISION_NOT_FOUND'],
        [400, 'INVALID_REQUEST | INVALID_WORKFLOW_CONFIG | INVALID_DATE_RANGE'],
        [422, 'INVALID_NODE_CONFIG'],
      ],
      async handler({ params, body, credential }) {
        return { data: await svc.create(credential.organizationId, params.workflow_id, body) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/workflows/{workflow_id}/dry-runs',
      operationId: 'listDryRuns',
      summary: "List a workflow's dry runs, newest first",
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: WorkflowIdParams,
      query: DryRunListQuery,
      response: z.object({ data: z.array(DryRunOut), pagination: PaginationOut }),
      errors: [WORKFLOW_NOT_FOUND],
      async handler({ params, query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc.list(credential.organizationId, params.workflow_id, filter, { page, limit });
        return paginate(items, { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/workflows/{workflow_id}/dry-runs/{dry_run_id}',
      operationId: 'getDryRun',
      summary: 'Get a dry run: status, and per execution the step-by-step diff with the recording',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: DryRunParams,
      response: z.object({ data: DryRunDetailOut }),
      errors: [WORKFLOW_NOT_FOUND, [404, 'DRY_RUN_NOT_FOUND']],
      async handler({ params, credential }) {
        return { data: await svc.detail(credential.organizationId, params.workflow_id, params.dry_run_id) };
      },
    }),
  ];
}
