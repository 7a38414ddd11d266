/** The workflows endpoints of the contract: list, get, create, update, delete, activate, deactivate. */
import { paginate, PaginationOut } from '../../http/pagination';
import { MessageOut } from '../../http/openapi';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { workflowSuccessRate } from '../metrics/execution-metrics';
import type { Services } from '../../services';
import {
  classifyWorkflowIssue,
  WorkflowActivationOut,
  WorkflowDetailOut,
  WorkflowIdParams,
  WorkflowIn,
  WorkflowListQuery,
  WorkflowOut,
  WorkflowUpdate,
} from './workflow.schemas';
import type { Workflow } from './workflow.entity';
import { readWorkflowAnswer, WorkflowService } from './workflow.service';

/** A workflow as the list and the writes answer; `GET /v1/workflows/{id}` gets the same fields from SQL (`readWorkflowAnswer`). */
function toWorkflowOut(
  wf: Pick<Workflow, 'id' | 'name' | 'description' | 'status' | 'channel' | 'channelConnectionId' | 'executionCount' | 'successCount' | 'failureCount' | 'createdAt' | 'updatedAt'>,
): z.output<typeof WorkflowOut> {
  return {
    id: wf.id,
    name: wf.name,
    description: wf.description,
    status: wf.status,
    channel: wf.channel as z.output<typeof WorkflowOut>['channel'],
    channel_connection_id: wf.channelConnectionId,
    created_at: wf.createdAt.toISOString(),
    updated_at: wf.updatedAt.toISOString(),
    execution_count: wf.executionCount,
    success_rate: workflowSuccessRate(wf.successCount, wf.failureCount),
  };
}

const NOT_FOUND: [number, string] = [404, 'WORKFLOW_NOT_FOUND'];
const CONFIG_ERRORS: Array<[number, string]> = [
  [400, 'INVALID_WORKFLOW_CONFIG'],
  [422, 'INVALID_NODE_CONFIG'],
];

export function workflowRoutes(services: Services): AnyRoute[] {
  const svc = () => new WorkflowService(services.orm.em.fork());
  const tag = 'Workflows';
  return [
    defineRoute({
      method: 'get',
      path: '/v1/workflows',
      operationId: 'listWorkflows',
      summary: 'List workflows',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      query: WorkflowListQuery,
      response: z.object({ data: z.array(WorkflowOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc().list(credential.organizationId, filter, { page, limit });
        return paginate(items.map(toWorkflowOut), { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/workflows/{workflow_id}',
      operationId: 'getWorkflow',
      summary: 'Get a workflow with its configuration',
      tag,
      scope: 'workflows:read',
      limits: ['resource_read'],
      params: WorkflowIdParams,
      response: z.object({ data: WorkflowDetailOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return await readWorkflowAnswer(services.hotPool, credential.organizationId, params.workflow_id);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/workflows',
      operationId: 'createWorkflow',
      summary: 'Create a workflow (status draft)',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      body: WorkflowIn,
      classify: classifyWorkflowIssue,
      status: 201,
      response: z.object({ data: WorkflowOut }),
      errors: [...CONFIG_ERRORS, [409, 'WORKFLOW_ALREADY_EXISTS']],
      async handler({ body, credential }) {
        return { data: toWorkflowOut(await svc().create(credential.organizationId, body)) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/workflows/{workflow_id}',
      operationId: 'updateWorkflow',
      summary: 'Update a workflow; a configuration change is a new revision',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: WorkflowIdParams,
      body: WorkflowUpdate,
      classify: classifyWorkflowIssue,
      response: z.object({ data: WorkflowOut }),
      errors: [NOT_FOUND, ...CONFIG_ERRORS, [409, 'WORKFLOW_ALREADY_EXISTS']],
      async handler({ params, body, credential }) {
        return { data: toWorkflowOut(await svc().update(credential.organizationId, params.workflow_id, body)) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/workflows/{workflow_id}',
      operationId: 'deleteWorkflow',
      summary: 'Delete a workflow',
      tag,
      scope: 'workflows:delete',
      limits: ['resource_delete'],
      params: WorkflowIdParams,
      response: MessageOut,
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        await svc().delete(credential.organizationId, params.workflow_id);
        return { message: `Workflow ${params.workflow_id} deleted` };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/workflows/{workflow_id}/activate',
      operationId: 'activateWorkflow',
      summary: 'Activate a workflow (validates its configuration first)',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: WorkflowIdParams,
      response: z.object({ data: WorkflowActivationOut }),
      errors: [NOT_FOUND, ...CONFIG_ERRORS],
      async handler({ params, credential }) {
        const wf = await svc().activate(credential.organizationId, params.workflow_id);
        return { data: { id: wf.id, status: wf.status, activated_at: wf.activatedAt!.toISOString() } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/workflows/{workflow_id}/deactivate',
      operationId: 'deactivateWorkflow',
      summary: 'Deactivate a workflow',
      tag,
      scope: 'workflows:write',
      limits: ['resource_write'],
      params: WorkflowIdParams,
      response: z.object({ data: WorkflowActivationOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        const wf = await svc().deactivate(credential.organizationId, params.workflow_id);
        return { data: { id: wf.id, status: wf.status, deactivated_at: wf.deactivatedAt!.toISOString() } };
      },
    }),
  ];
}
