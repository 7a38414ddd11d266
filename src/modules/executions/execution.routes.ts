/**
 * The execution endpoints: a workflow's executions (list, detail with steps, retry,
 * cancel) and its metrics.
 */
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import {
  classifyExecutionQueryIssue,
  ExecutionDetailOut,
  ExecutionListQuery,
  ExecutionOut,
  ExecutionParams,
  MetricsOut,
  MetricsQuery,
} from './execution.schemas';
import { ExecutionService, toExecutionOut } from './execution.service';
import { WorkflowIdParams } from '../workflows/workflow.schemas';

const WORKFLOW_NOT_FOUND: [number, string] = [404, 'WORKFLOW_NOT_FOUND'];
const EXECUTION_NOT_FOUND: [number, string] = [404, 'EXECUTION_NOT_FOUND'];

export function executionRoutes(services: Services): AnyRoute[] {
  const svc = new ExecutionService(services);
  const tag = 'Executions';
  return [
    defineRoute({
      method: 'get',
      path: '/v1/workflows/{workflow_id}/executions',
      operationId: 'listExecutions',
      summary: "List a workflow's executions, newest first",
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: WorkflowIdParams,
      query: ExecutionListQuery,
      classify: classifyExecutionQueryIssue,
      response: z.object({ data: z.array(ExecutionOut), pagination: PaginationOut }),
      errors: [WORKFLOW_NOT_FOUND, [400, 'INVALID_DATE_RANGE']],
      async handler({ params, query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc.list(credential.organizationId, params.workflow_id, filter, { page, limit });
        return paginate(items.map((e) => toExecutionOut(e, services.config)), { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/workflows/{workflow_id}/executions/{execution_id}',
      operationId: 'getExecution',
      summary: 'Get an execution with its steps',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: ExecutionParams,
      response: z.object({ data: ExecutionDetailOut }),
      errors: [WORKFLOW_NOT_FOUND, EXECUTION_NOT_FOUND],
      async handler({ params, credential }) {
        return { data: await svc.detail(credential.organizationId, params.workflow_id, params.execution_id) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/workflows/{workflow_id}/executions/{execution_id}/retry',
      operationId: 'retryExecution',
      summary: 'Re-run a failed or cancelled execution as a new execution linked by retry_of',
      tag,
      scope: 'workflows:write',
      limits: ['execution_ops'],
      params: ExecutionParams,
      status: 201,
      response: z.object({ data: ExecutionOut }),
      errors: [WORKFLOW_NOT_FOUND, EXECUTION_NOT_FOUND, [409, 'EXECUTION_NOT_RETRYABLE | WORKFLOW_NOT_ACTIVE']],
      async handler({ params, credential, claim }) {
        return { data: toExecutionOut(await svc.retry(credential.organizationId, params.workflow_id, params.execution_id, { claim }), services.config) };
      },
      // The first try committed the new execution (started by the reconciler if that try did not) and died before its answer was stored.
      async resume({ params, credential, point }) {
        return { data: toExecutionOut(await svc.get(credential.organizationId, params.workflow_id, point.execution_id ?? ''), services.config) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/workflows/{workflow_id}/executions/{execution_id}/cancel',
      operationId: 'cancelExecution',
      summary: 'Cancel a running execution',
      tag,
      scope: 'workflows:write',
      limits: ['execution_ops'],
      params: ExecutionParams,
      response: z.object({ data: ExecutionOut }),
      errors: [WORKFLOW_NOT_FOUND, EXECUTION_NOT_FOUND, [409, 'EXECUTION_NOT_RUNNING']],
      async handler({ params, credential }) {
        return { data: toExecutionOut(await svc.cancel(credential.organizationId, params.workflow_id, params.execution_id), services.config) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/workflows/{workflow_id}/metrics',
      operationId: 'getWorkflowMetrics',
      summary: "A workflow's execution metrics over a period, bucketed by granularity",
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: WorkflowIdParams,
      query: MetricsQuery,
      classify: classifyExecutionQueryIssue,
      response: z.object({ data: MetricsOut }),
      errors: [WORKFLOW_NOT_FOUND, [400, 'INVALID_DATE_RANGE'], [422, 'INVALID_GRANULARITY']],
      async handler({ params, query, credential }) {
        return { data: await svc.metrics(credential.organizationId, params.workflow_id, query) };
      },
    }),
  ];
}
