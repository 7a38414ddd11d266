/**
 * GET /v1/analytics/journey: how far conversations (message → execution → reply → input →
 * completion) or a workflow's executions (its nodes in path order) got, step by step, and
 * where and why they stopped. Reads the period's messages and executions through their indexes.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { invalid } from '../../errors';
import type { z } from '../../http/zod';
import { resolvePeriod } from '../metrics/execution-metrics';
import { nodePathOrder, periodOut, requireWorkflow } from './analytics.common';
import type { JourneyQuery } from './analytics.schemas';

const CONVERSATION_STEPS = ['message_received', 'execution_started', 'first_reply_sent', 'input_collected', 'completed'] as const;

/**
 * Why a journey stopped, from its execution (or the lack of one). `handed_off`: a handoff
 * ended its execution, or its message came while the customer was handed off. A failure says its failed
 * step's own error type when it has one (a channel's: `customer_service_window_closed`,
 * `channel_unauthorized`, ...), which is more than the execution's `api_error`.
 */
const reasonSql = (handedOffMessage = 'false') => `case
  when x.id is null and ${handedOffMessage} then 'handed_off'
  when x.id is null then 'no workflow matched'
  when x.status = 'cancelled' and x.output ->> 'next_action' = 'handed_off' then 'handed_off'
  when x.status = 'cancelled' then 'cancelled'
  when x.status = 'failed' and x.error_type = 'timeout' and x.channel = 'voice'
   and exists (select 1 from execution_steps hs where hs.execution_id = x.id and hs.error_type = 'caller_hung_up') then 'caller_hung_up'
  when x.status = 'failed' and x.error_type = 'timeout' then 'no reply before the form timed out'
  when x.status = 'failed' then coalesce(
    (select s.error_type from execution_steps s where s.execution_id = x.id and s.status = 'failed' and s.error_type is not null order by s.started_at desc limit 1),
    x.error_type, 'failed')
  when x.status = 'running' then 'still running'
  else 'completed' end`;
const REASON_SQL = reasonSql();
/** A conversation-opening message that started nothing because its customer was handed to a person (docs/handoff.md). */
const MESSAGE_HANDED_OFF = `exists (select 1 from customer_handoffs h
   where h.customer_id = m.customer_id and h.started_at <= m.created_at and coalesce(h.ended_at, h.until) > m.created_at)`;

export async function journey(em: EntityManager, organizationId: string, q: z.output<typeof JourneyQuery>) {
  const period = resolvePeriod(q.start_date, q.end_date);
  // One row per journey: how many steps it completed in order, the time to each, and its stop reason.
  let rows: Array<{ reached: number; t: Array<number | null>; reason: string; duration: number | null }>;
  let names: string[];
  if (q.journey_type === 'workflow') {
    if (!q.workflow_id) throw invalid('workflow_id is required with journey_type=workflow', 'workflow_id', 'MISSING_REQUIRED_FIELD');
    const wf = await requireWorkflow(em, organizationId, q.workflow_id);
    names = nodePathOrder(wf);
    const raw = await em.execute<Array<{ nodes: Record<string, number> | null; reason: string; duration: number | null }>>(
      `select ${REASON_SQL} as reason, x.duration_ms as duration,
              (select jsonb_object_agg(s.node_id, coalesce(s.duration_ms, 0)) from execution_steps s where s.execution_id = x.id and s.status = 'completed') as nodes
         from executions x where x.organization_id = ? and x.workflow_id = ? and x.started_at >= ? and x.started_at < ?`,
      [organizationId, wf.id, period.start, period.end],
    );
    rows = raw.map((r) => {
      let reached = 0;
      const t: Array<number | null> = [];
      for (const id of names) {
        if (r.nodes?.[id] === undefined) break;
        reached++;
        t.push(r.nodes[id]!);
      }
      return { reached, t, reason: r.reason, duration: r.reason === 'completed' ? r.duration : null };
    });
  } else {
    names = [...CONVERSATION_STEPS];
    // Journeys start with a customer's conversation-opening message (not a form reply) and follow the first execution it started.
    const raw = await em.execute<Array<{ reason: string; t2: number | null; t3: number | null; t4: number | null; t5: number | null }>>(
      `select ${reasonSql(MESSAGE_HANDED_OFF)} as reason,
              extract(epoch from x.started_at - m.created_at) * 1000 as t2,
              extract(epoch from o.created_at - m.created_at) * 1000 as t3,
              extract(epoch from coalesce(r.created_at, case when x.status = 'success' then x.completed_at end) - m.created_at) * 1000 as t4,
              case when x.status = 'success' then extract(epoch from x.completed_at - m.created_at) * 1000 end as t5
         from messages m
         left join executions x on x.id = m.execution_id and x.message_id = m.id
         left join lateral (select created_at from messages o where o.execution_id = x.id and o.direction = 'outbound' order by created_at limit 1) o on true
         left join lateral (select created_at from messages r where r.execution_id = x.id and r.direction = 'inbound' and r.reply_to_wait is not null order by created_at limit 1) r on true
        where m.organization_id = ? and m.direction = 'inbound' and m.reply_to_wait is null and m.created_at >= ? and m.created_at < ?`,
      [organizationId, period.start, period.end],
    );
    rows = raw.map((r) => {
      const t = [0, r.t2, r.t3, r.t4, r.t5];
      let reached = 0;
      while (reached < t.length && t[reached] !== null && t[reached] !== undefined) reached++;
      return { reached, t: t.slice(0, reached), reason: r.reason, duration: r.t5 };
    });
  }
  const total = rows.length;
  const completed = rows.filter((r) => r.reached === names.length).length;
  const ratio = (a: number, b: number) => (b === 0 ? 0 : Math.round((a / b) * 10_000) / 10_000);
  // A journey enters step k once it completed step k − 1 (every journey enters step 1): a
  // customer whose form timed out saw the question, so they entered the form step.
  const entered = (i: number) => rows.filter((r) => r.reached >= i);
  const journeySteps = names.map((name, i) => {
    const completedIt = rows.filter((r) => r.reached > i);
    const times = completedIt.map((r) => Number(r.t[i] ?? 0));
    const enteredIt = entered(i).length;
    return {
      step: i + 1,
      name,
      customers: enteredIt,
      completion_rate: ratio(completedIt.length, enteredIt),
      average_duration_ms: times.length === 0 ? 0 : Math.round(times.reduce((s, v) => s + v, 0) / times.length),
    };
  });
  // Completed journeys: every step reached (the execution succeeded); their duration is message → completion (conversation) or the execution's (workflow).
  const durations = rows.filter((r) => r.reached === names.length && r.duration !== null).map((r) => Number(r.duration));
  const out: Record<string, unknown> = {
    total_journeys: total,
    completed_journeys: completed,
    completion_rate: ratio(completed, total),
    average_journey_duration: durations.length === 0 ? 0 : Math.round(durations.reduce((s, v) => s + v, 0) / durations.length),
    journey_steps: journeySteps,
  };
  if (q.include_dropoffs) {
    // Drop-off at step k: journeys that entered step k and did not complete it.
    out.drop_off_points = names
      .map((name, i) => {
        const stopped = rows.filter((r) => r.reached === i);
        const before = entered(i).length;
        const counts = new Map<string, number>();
        for (const r of stopped) counts.set(r.reason, (counts.get(r.reason) ?? 0) + 1);
        return {
          step: i + 1,
          name,
          drop_off_count: stopped.length,
          drop_off_rate: ratio(stopped.length, before),
          common_reasons: [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 3).map(([r]) => r),
        };
      })
      .filter((d) => d.drop_off_count > 0);
  }
  return { period: periodOut(period), journey: out };
}
