/** /v1/analytics: workflow, performance, engagement, journey and realtime metrics, and the realtime SSE stream. */
import type { EntityManager } from '@mikro-orm/postgresql';
import { requireScope } from '../../http/auth';
import { type AnyRoute, defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { readinessChecks } from '../../readiness';
import type { Services } from '../../services';
import {
  AnalyticsWorkflowParams,
  checkWorkflowAnalyticsQuery,
  classifyAnalyticsIssue,
  EngagementOut,
  EngagementQuery,
  JourneyOut,
  JourneyQuery,
  PerformanceOut,
  PerformanceQuery,
  RealtimeOut,
  RealtimeQuery,
  WorkflowAnalyticsOut,
  WorkflowAnalyticsQuery,
} from './analytics.schemas';
import { engagement } from './engagement-analytics.service';
import { journey } from './journey-analytics.service';
import { workflowPerformance } from './performance-analytics.service';
import { healthOf, realtime, systemMetrics } from './realtime-analytics.service';
import { workflowAnalytics } from './workflow-analytics.service';

const WORKFLOW_NOT_FOUND: [number, string] = [404, 'WORKFLOW_NOT_FOUND'];
const DATE_RANGE: [number, string] = [400, 'INVALID_DATE_RANGE'];

/** system_health runs the readiness probes at most this often per process, so realtime stays cheap. */
const HEALTH_TTL_MS = 5000;

export function analyticsRoutes(services: Services): AnyRoute[] {
  const em = () => services.orm.em.fork() as EntityManager;
  const tag = 'Analytics';
  let health: { at: number; value: Promise<'healthy' | 'degraded' | 'unhealthy'> } | undefined;
  const cachedHealth = () => {
    if (!health || Date.now() - health.at > HEALTH_TTL_MS) health = { at: Date.now(), value: readinessChecks(services).then(healthOf) };
    return health.value;
  };
  const realtimeObject = async (organizationId: string, q: z.output<typeof RealtimeQuery>) => {
    const data: Record<string, unknown> = await realtime(em(), organizationId, q, cachedHealth);
    if (q.include_system) data.system_metrics = await systemMetrics(services);
    return data;
  };

  return [
    defineRoute({
      method: 'get',
      path: '/v1/analytics/workflows/{workflow_id}',
      operationId: 'getWorkflowAnalytics',
      summary: 'Workflow analytics: metrics, trends and per-bucket figures over a period',
      tag,
      scope: 'analytics:read',
      limits: ['analytics_historical'],
      params: AnalyticsWorkflowParams,
      query: WorkflowAnalyticsQuery,
      classify: classifyAnalyticsIssue,
      response: z.object({ data: WorkflowAnalyticsOut }),
      errors: [WORKFLOW_NOT_FOUND, DATE_RANGE, [400, 'INVALID_METRICS'], [422, 'INVALID_GRANULARITY']],
      async handler({ params, query, credential }) {
        checkWorkflowAnalyticsQuery(query);
        return { data: await workflowAnalytics(em(), credential.organizationId, params.workflow_id, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/workflows/{workflow_id}/performance',
      operationId: 'getWorkflowPerformance',
      summary: 'Workflow performance: latency percentiles, throughput, error rates, nodes and channels',
      tag,
      scope: 'analytics:read',
      limits: ['analytics_historical'],
      params: AnalyticsWorkflowParams,
      query: PerformanceQuery,
      response: z.object({ data: PerformanceOut }),
      errors: [WORKFLOW_NOT_FOUND, DATE_RANGE],
      async handler({ params, query, credential }) {
        return { data: await workflowPerformance(em(), credential.organizationId, params.workflow_id, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/customers/engagement',
      operationId: 'getCustomerEngagement',
      summary: 'Customer engagement: active, new and returning customers, sessions, satisfaction',
      tag,
      scope: 'analytics:read',
      limits: ['analytics_historical'],
      query: EngagementQuery,
      response: z.object({ data: EngagementOut }),
      errors: [DATE_RANGE],
      async handler({ query, credential }) {
        return { data: await engagement(em(), credential.organizationId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/customers/journey',
      operationId: 'getCustomerJourney',
      summary: 'Customer journey funnel (conversation, or one workflow node by node) with drop-offs',
      tag,
      scope: 'analytics:read',
      limits: ['analytics_historical'],
      query: JourneyQuery,
      response: z.object({ data: JourneyOut }),
      errors: [WORKFLOW_NOT_FOUND, DATE_RANGE],
      async handler({ query, credential }) {
        return { data: await journey(em(), credential.organizationId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/realtime',
      operationId: 'getRealtimeAnalytics',
      summary: 'Real-time metrics: running executions, the last hour of messages, system health',
      tag,
      scope: 'analytics:read',
      limits: ['analytics_realtime'],
      query: RealtimeQuery,
      response: z.object({ data: RealtimeOut }),
      errors: [WORKFLOW_NOT_FOUND],
      async handler({ query, credential }) {
        if (query.include_system) requireScope(credential, 'admin');
        return { data: await realtimeObject(credential.organizationId, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/analytics/realtime/stream',
      operationId: 'streamRealtimeAnalytics',
      summary: 'Server-Sent Events: the realtime object (`event: realtime`, data = the `data` of GET /v1/analytics/realtime) every 5 seconds',
      description: 'text/event-stream. The first event is sent at once; the stream stays open until the client disconnects. Counts once against the realtime limit.',
      tag,
      scope: 'analytics:read',
      limits: ['analytics_realtime'],
      query: RealtimeQuery,
      produces: {
        content: { 'text/event-stream': z.string().openapi({ example: 'event: realtime\ndata: {"current_metrics":{…}}\n\n' }) },
        headers: ['Cache-Control', 'X-Accel-Buffering'],
      },
      errors: [WORKFLOW_NOT_FOUND],
      async handler({ query, credential, ctx }) {
        if (query.include_system) requireScope(credential, 'admin');
        // The first object is built before the headers go out, so a bad workflow_id is still a 404.
        const first = await realtimeObject(credential.organizationId, query);
        // Written to the socket directly (Koa does not respond): a client going away is the normal end, not an error.
        const res = ctx.res;
        ctx.status = 200;
        ctx.respond = false;
        ctx.set({ 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
        ctx.req.socket.setTimeout(0);
        res.flushHeaders();
        const send = (data: unknown) => {
          if (!res.writableEnded) res.write(`event: realtime\ndata: ${JSON.stringify(data)}\n\n`);
        };
        send(first);
        let busy = false;
        const timer = setInterval(() => {
          if (busy) return;
          busy = true;
          realtimeObject(credential.organizationId, query)
            .then(send, (err: unknown) => services.logger.warn({ err }, 'realtime stream update failed'))
            .finally(() => {
              busy = false;
            });
        }, services.config.ANALYTICS_STREAM_INTERVAL_MS);
        res.on('close', () => {
          clearInterval(timer);
          if (!res.writableEnded) res.end();
        });
        return undefined;
      },
    }),
  ];
}
