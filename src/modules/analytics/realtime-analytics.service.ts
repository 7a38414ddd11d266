/**
 * GET /v1/analytics/realtime (and its SSE stream): running executions, the last hour's
 * messages and reply delays, system health and, for admins, this process's own figures.
 * Bounded, indexed sets only.
 */
import os from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Services } from '../../services';
import { requireWorkflow } from './analytics.common';

/** system_health from the readiness checks: all ok → healthy; PostgreSQL ok but another down → degraded. */
export function healthOf(checks: Record<string, 'ok' | 'unavailable'>): 'healthy' | 'degraded' | 'unhealthy' {
  if (checks.postgres !== 'ok') return 'unhealthy';
  return Object.values(checks).every((v) => v === 'ok') ? 'healthy' : 'degraded';
}

let cpuSample = { at: process.hrtime.bigint(), usage: process.cpuUsage() };

/** This process's own figures (admin only). */
export async function systemMetrics(services: Services) {
  const now = process.hrtime.bigint();
  const usage = process.cpuUsage();
  const wallUs = Number(now - cpuSample.at) / 1000;
  const cpuUs = usage.user - cpuSample.usage.user + (usage.system - cpuSample.usage.system);
  cpuSample = { at: now, usage };
  const metric = await services.metrics.duration.get();
  let sum = 0;
  let count = 0;
  for (const v of metric.values) {
    if (v.metricName === 'http_request_duration_seconds_sum') sum += v.value;
    if (v.metricName === 'http_request_duration_seconds_count') count += v.value;
  }
  return {
    cpu_usage: wallUs <= 0 ? 0 : Math.round((cpuUs / wallUs) * 1000) / 1000,
    memory_usage: Math.round((process.memoryUsage.rss() / os.totalmem()) * 1000) / 1000,
    api_response_time_ms: count === 0 ? 0 : Math.round((sum / count) * 1000 * 100) / 100,
  };
}

/**
 * The realtime object. Bounded sets only: running executions through their partial index,
 * messages of the last hour through (organization_id, created_at).
 */
export async function realtime(em: EntityManager, organizationId: string, q: { workflow_id?: string; channel?: string }, health: () => Promise<'healthy' | 'degraded' | 'unhealthy'>) {
  if (q.workflow_id) await requireWorkflow(em, organizationId, q.workflow_id);
  const wfFilter = q.workflow_id ? ' and workflow_id = ?' : '';
  const chFilter = q.channel ? ' and channel = ?' : '';
  const extra = [...(q.workflow_id ? [q.workflow_id] : []), ...(q.channel ? [q.channel] : [])];
  const [workflows, running, recent, systemHealth] = await Promise.all([
    em.execute<Array<{ id: string; name: string }>>(
      `select id, name from workflows where organization_id = ? and status = 'active' and deleted_at is null${q.workflow_id ? ' and id = ?' : ''}${chFilter} order by name`,
      [organizationId, ...extra],
    ),
    em.execute<Array<{ workflow_id: string; channel: string; n: number; customers: number }>>(
      `select workflow_id, channel, count(*)::int as n, count(distinct customer_id)::int as customers from executions
        where organization_id = ? and status = 'running'${wfFilter}${chFilter} group by 1, 2`,
      [organizationId, ...extra],
    ),
    // Each inbound message of the last hour with the delay of the first outbound message to its customer after it.
    em.execute<Array<{ workflow_id: string | null; channel: string; inbound: number; customers: number; replies: number; reply_ms: number }>>(
      `select x.workflow_id, m.channel, count(*)::int as inbound, count(distinct m.customer_id)::int as customers,
              count(o.created_at)::int as replies, coalesce(sum(extract(epoch from o.created_at - m.created_at) * 1000), 0)::float8 as reply_ms
         from messages m
         left join executions x on x.id = m.execution_id
         left join lateral (select created_at from messages o where o.customer_id = m.customer_id and o.direction = 'outbound'
                               and o.created_at >= m.created_at and o.created_at < m.created_at + interval '1 hour'
                             order by o.created_at limit 1) o on true
        where m.organization_id = ? and m.direction = 'inbound' and m.created_at >= now() - interval '1 hour'${q.workflow_id ? ' and x.workflow_id = ?' : ''}${q.channel ? ' and m.channel = ?' : ''}
        group by 1, 2`,
      [organizationId, ...extra],
    ),
    health(),
  ]);
  const sum = <T>(rows: T[], f: (r: T) => number) => rows.reduce((s, r) => s + f(r), 0);
  const avgReply = (rows: typeof recent) => {
    const n = sum(rows, (r) => r.replies);
    return n === 0 ? 0 : Math.round(sum(rows, (r) => r.reply_ms) / n);
  };
  const channels = new Set([...running.map((r) => r.channel), ...recent.map((r) => r.channel)]);
  return {
    timestamp: new Date().toISOString(),
    current_metrics: {
      active_workflows: workflows.length,
      active_executions: sum(running, (r) => r.n),
      messages_in_last_hour: sum(recent, (r) => r.inbound),
      average_response_time_ms: avgReply(recent),
      system_health: systemHealth,
    },
    workflow_metrics: workflows.map((w) => {
      const mine = recent.filter((r) => r.workflow_id === w.id);
      return {
        workflow_id: w.id,
        name: w.name,
        active_executions: sum(
          running.filter((r) => r.workflow_id === w.id),
          (r) => r.n,
        ),
        messages_in_last_hour: sum(mine, (r) => r.inbound),
        average_response_time_ms: avgReply(mine),
      };
    }),
    channel_metrics: Object.fromEntries(
      [...channels].sort().map((ch) => [
        ch,
        {
          active_conversations: sum(
            running.filter((r) => r.channel === ch),
            (r) => r.customers,
          ),
          messages_in_last_hour: sum(
            recent.filter((r) => r.channel === ch),
            (r) => r.inbound,
          ),
        },
      ]),
    ),
  };
}
