/**
 * The triggers endpoints of the contract (list, create, get, update, delete, activate,
 * deactivate, pause, resume, executions list and detail, metrics) plus the endpoint an
 * `api` trigger is fired at (`POST /v1/triggers/{trigger_id}/fire`, the trigger's `endpoint`).
 */
import { conflict, DomainError } from '../../errors';
import { MessageOut } from '../../http/openapi';
import { paginate, PaginationOut } from '../../http/pagination';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { Services } from '../../services';
import { resolveCustomerRef } from '../customers/customer-ref';
import { fireTrigger } from './trigger-firing';
import {
  type ApiTriggerConfig,
  classifyTriggerIssue,
  TriggerExecutionDetailOut,
  TriggerExecutionListQuery,
  TriggerExecutionOut,
  TriggerExecutionParams,
  TriggerFireIn,
  TriggerIdParams,
  TriggerIn,
  TriggerListQuery,
  TriggerMetricsOut,
  TriggerMetricsQuery,
  TriggerOut,
  TriggerTransitionOut,
  TriggerUpdate,
} from './trigger.schemas';
import { toTriggerExecutionDetailOut, toTriggerExecutionOut, toTriggerOut } from './trigger.out';
import { type Transition, TriggerService, triggerNotFound } from './trigger.service';

const HOUR = 3_600_000;

const NOT_FOUND: [number, string] = [404, 'TRIGGER_NOT_FOUND'];
const CONFIG_ERRORS: Array<[number, string]> = [
  [400, 'INVALID_TRIGGER_CONFIG'],
  [422, 'INVALID_CRON_EXPRESSION'],
  [503, 'SCHEDULER_UNAVAILABLE'],
];

export function triggerRoutes(services: Services): AnyRoute[] {
  /** The input's `customer_id` (ours or the channel's own id), when it names a customer of the organization. */
  const customerOf = async (organizationId: string, channel: string, input: Record<string, unknown>) => {
    const customerId = await resolveCustomerRef(services.orm.em.fork(), organizationId, channel, input.customer_id);
    return customerId ? { customerId } : {};
  };
  const svc = () => new TriggerService(services.orm.em.fork(), services);
  const tag = 'Triggers';

  const transition = (op: Transition, field: 'activated_at' | 'deactivated_at' | 'paused_at' | 'resumed_at', summary: string) =>
    defineRoute({
      method: 'post',
      path: `/v1/triggers/{trigger_id}/${op}`,
      operationId: `${op}Trigger`,
      summary,
      tag,
      scope: 'triggers:write',
      limits: ['resource_write'],
      params: TriggerIdParams,
      response: z.object({ data: TriggerTransitionOut }),
      errors: [NOT_FOUND, [409, 'INVALID_STATE_TRANSITION'], [503, 'SCHEDULER_UNAVAILABLE']],
      async handler({ params, credential }) {
        const t = await svc().transition(credential.organizationId, params.trigger_id, op);
        const at = { activated_at: t.activatedAt, deactivated_at: t.deactivatedAt, paused_at: t.pausedAt, resumed_at: t.resumedAt }[field];
        return { data: { id: t.id, status: t.status, [field]: (at ?? t.updatedAt).toISOString() } };
      },
    });

  return [
    defineRoute({
      method: 'get',
      path: '/v1/triggers',
      operationId: 'listTriggers',
      summary: 'List triggers',
      tag,
      scope: 'triggers:read',
      limits: ['resource_read'],
      query: TriggerListQuery,
      response: z.object({ data: z.array(TriggerOut), pagination: PaginationOut }),
      async handler({ query, credential }) {
        const { page, limit, ...filter } = query;
        const { items, total } = await svc().list(credential.organizationId, filter, { page, limit });
        return paginate(
          items.map((t) => toTriggerOut(t, services.config, { withSecret: false })),
          { page, limit },
          total,
        );
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/triggers',
      operationId: 'createTrigger',
      summary: 'Create a trigger (status active)',
      description:
        'The service assigns a webhook trigger its `url` (and a `secret` when none is given) and an api trigger its `endpoint`. ' +
        'A schedule trigger becomes a Temporal Schedule.',
      tag,
      scope: 'triggers:write',
      limits: ['resource_write'],
      body: TriggerIn,
      classify: classifyTriggerIssue,
      status: 201,
      response: z.object({ data: TriggerOut }),
      errors: [...CONFIG_ERRORS, [404, 'WORKFLOW_NOT_FOUND'], [409, 'TRIGGER_ALREADY_EXISTS']],
      async handler({ body, credential }) {
        return { data: toTriggerOut(await svc().create(credential.organizationId, body), services.config) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/triggers/{trigger_id}',
      operationId: 'getTrigger',
      summary: 'Get a trigger',
      tag,
      scope: 'triggers:read',
      limits: ['resource_read'],
      params: TriggerIdParams,
      response: z.object({ data: TriggerOut }),
      errors: [NOT_FOUND],
      async handler({ params, credential }) {
        return { data: toTriggerOut(await svc().get(credential.organizationId, params.trigger_id), services.config) };
      },
    }),
    defineRoute({
      method: 'put',
      path: '/v1/triggers/{trigger_id}',
      operationId: 'updateTrigger',
      summary: 'Update a trigger\'s name and/or configuration',
      tag,
      scope: 'triggers:write',
      limits: ['resource_write'],
      params: TriggerIdParams,
      body: TriggerUpdate,
      classify: classifyTriggerIssue,
      response: z.object({ data: TriggerOut }),
      errors: [NOT_FOUND, ...CONFIG_ERRORS, [409, 'TRIGGER_ALREADY_EXISTS']],
      async handler({ params, body, credential }) {
        return { data: toTriggerOut(await svc().update(credential.organizationId, params.trigger_id, body), services.config) };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/triggers/{trigger_id}',
      operationId: 'deleteTrigger',
      summary: 'Delete a trigger (and its schedule)',
      tag,
      scope: 'triggers:delete',
      limits: ['resource_delete'],
      params: TriggerIdParams,
      response: MessageOut,
      errors: [NOT_FOUND, [503, 'SCHEDULER_UNAVAILABLE']],
      async handler({ params, credential }) {
        await svc().delete(credential.organizationId, params.trigger_id);
        return { message: `Trigger ${params.trigger_id} deleted` };
      },
    }),
    transition('activate', 'activated_at', 'Activate a trigger (from inactive, paused or active)'),
    transition('deactivate', 'deactivated_at', 'Deactivate a trigger (from any state)'),
    transition('pause', 'paused_at', 'Pause a trigger (from any state)'),
    transition('resume', 'resumed_at', 'Resume a paused trigger (a no-op on an active one)'),
    defineRoute({
      method: 'get',
      path: '/v1/triggers/{trigger_id}/executions',
      operationId: 'listTriggerExecutions',
      summary: 'List a trigger\'s firings',
      tag,
      scope: 'triggers:read',
      // Reading executions is a read (resource_read), for workflows and triggers alike; execution_ops counts what acts on them.
      limits: ['resource_read'],
      params: TriggerIdParams,
      query: TriggerExecutionListQuery,
      response: z.object({ data: z.array(TriggerExecutionOut), pagination: PaginationOut }),
      errors: [NOT_FOUND, [400, 'INVALID_DATE_RANGE']],
      async handler({ params, query, credential }) {
        const { page, limit, status, start_date, end_date } = query;
        const { items, total } = await svc().listExecutions(
          credential.organizationId,
          params.trigger_id,
          { ...(status ? { status } : {}), ...(start_date ? { start: start_date } : {}), ...(end_date ? { end: end_date } : {}) },
          { page, limit },
        );
        return paginate(items.map(toTriggerExecutionOut), { page, limit }, total);
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/triggers/{trigger_id}/executions/{execution_id}',
      operationId: 'getTriggerExecution',
      summary: 'Get one firing of a trigger',
      tag,
      scope: 'triggers:read',
      // Reading executions is a read (resource_read), for workflows and triggers alike; execution_ops counts what acts on them.
      limits: ['resource_read'],
      params: TriggerExecutionParams,
      response: z.object({ data: TriggerExecutionDetailOut }),
      errors: [[404, 'TRIGGER_NOT_FOUND | TRIGGER_EXECUTION_NOT_FOUND']],
      async handler({ params, credential }) {
        return { data: toTriggerExecutionDetailOut(await svc().getExecution(credential.organizationId, params.trigger_id, params.execution_id)) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/triggers/{trigger_id}/metrics',
      operationId: 'getTriggerMetrics',
      summary: 'Metrics of a trigger\'s firings over a period',
      tag,
      scope: 'triggers:read',
      limits: ['resource_read'],
      params: TriggerIdParams,
      query: TriggerMetricsQuery,
      classify: classifyTriggerIssue,
      response: z.object({ data: TriggerMetricsOut }),
      errors: [NOT_FOUND, [400, 'INVALID_DATE_RANGE'], [422, 'INVALID_GRANULARITY']],
      async handler({ params, query, credential }) {
        return { data: await svc().metrics(credential.organizationId, params.trigger_id, query) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/triggers/{trigger_id}/fire',
      operationId: 'fireApiTrigger',
      summary: 'Fire an api trigger (its `endpoint`): the JSON body becomes the execution input',
      description: 'Limited to the trigger\'s `configuration.rate_limit` requests per hour besides the usual limits.',
      tag,
      scope: 'triggers:write',
      limits: ['execution_ops'],
      params: TriggerIdParams,
      body: TriggerFireIn,
      status: 201,
      response: z.object({ data: TriggerExecutionOut }),
      errors: [NOT_FOUND, [409, 'TRIGGER_NOT_ACTIVE | WORKFLOW_NOT_ACTIVE'], [500, 'TRIGGER_EXECUTION_FAILED']],
      async resourceLimits({ params, credential }) {
        const trigger = await svc()
          .get(credential.organizationId, params.trigger_id ?? '')
          .catch((err: unknown) => {
            if (err instanceof DomainError && err.kind === 'not_found') return undefined;
            throw err;
          });
        if (trigger?.type !== 'api') return [];
        const config = trigger.configuration as unknown as ApiTriggerConfig;
        return [{ rule: { name: 'api_trigger', limit: config.rate_limit, windowMs: HOUR }, subject: trigger.id }];
      },
      async handler({ params, body, credential, ctx, claim }) {
        const service = svc();
        const trigger = await service.get(credential.organizationId, params.trigger_id);
        if (trigger.type !== 'api') throw triggerNotFound();
        const fired = await fireTrigger(services, {
          ...(claim ? { claim } : {}),
          organizationId: trigger.organizationId,
          triggerId: trigger.id,
          workflowId: trigger.workflowId,
          channel: trigger.channel,
          input: body,
          ...await customerOf(credential.organizationId, trigger.channel, body),
          metadata: { source: 'api', user_agent: ctx.get('user-agent') || null, credential_id: credential.id },
        });
        return { data: toTriggerExecutionOut(await service.getExecution(credential.organizationId, trigger.id, fired.triggerExecutionId)) };
      },
      // The first try recorded its firing (and its execution, which the reconciler starts) and died before its answer was stored.
      async resume({ params, credential, point }) {
        const firing = await svc().getExecution(credential.organizationId, params.trigger_id, point.trigger_execution_id ?? '');
        // A firing whose workflow could not run was answered with its error, recorded on it.
        if (firing.execution_id === null && firing.status === 'failed') {
          throw conflict(firing.error_code ?? 'TRIGGER_EXECUTION_FAILED', firing.error_message ?? 'Trigger execution failed');
        }
        return { data: toTriggerExecutionOut(firing) };
      },
    }),
  ];
}
