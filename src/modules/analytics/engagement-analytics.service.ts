/**
 * GET /v1/analytics/engagement: customers (total, active, new, returning), sessions (a
 * customer's messages on one channel with gaps of at most 30 minutes), satisfaction and NPS,
 * per channel and against the previous period. Sessions read the period's messages through
 * their (organization_id, created_at) index (docs/analytics.md).
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from '../../http/zod';
import {
  type Counters,
  customerSatisfaction,
  distinctCustomers,
  netPromoterScore,
  type Period,
  previousPeriod,
  scoreSums,
  type Scope,
  sumCounters,
  totalOf,
  trend,
} from '../metrics/analytics-metrics';
import { resolvePeriod } from '../metrics/execution-metrics';
import { periodOut } from './analytics.common';
import type { EngagementQuery } from './analytics.schemas';

/** Customers of a segment: `new` / `returning` relative to the period, or a tag. As SQL returning customer ids. */
function segmentCustomers(organizationId: string, segment: string | undefined, period: Period) {
  if (segment === undefined) return undefined;
  if (segment === 'new') return { sql: 'select id from customers where organization_id = ? and first_seen_at >= ? and first_seen_at < ?', params: [organizationId, period.start, period.end] };
  if (segment === 'returning') return { sql: 'select id from customers where organization_id = ? and first_seen_at < ?', params: [organizationId, period.start] };
  return { sql: 'select id from customers where organization_id = ? and tags @> array[?]::text[]', params: [organizationId, segment] };
}

const SESSION_GAP = '30 minutes';

export async function engagement(em: EntityManager, organizationId: string, q: z.output<typeof EngagementQuery>) {
  const period = resolvePeriod(q.start_date, q.end_date);
  const prevPeriod = previousPeriod(period);
  const one = async (p: Period) => {
    const segment = segmentCustomers(organizationId, q.customer_segment, p);
    const scope = { organizationId, ...(q.channel ? { channel: q.channel } : {}), ...(segment ? { customerIds: segment } : {}) };
    const active = await distinctCustomers(em, scope, p, { inbound: true });
    const restrict = segment ? ` and c.id in (${segment.sql})` : '';
    const channelFilter = q.channel ? ' and c.channel = ?' : '';
    const [counts] = await em.execute<Array<{ total: number; fresh: number }>>(
      `select count(*)::int as total,
              count(*) filter (where c.first_seen_at >= ? and c.id in (${active.ids.sql}))::int as fresh
         from customers c where c.organization_id = ? and c.first_seen_at < ?${channelFilter}${restrict}`,
      [p.start, ...active.ids.params, organizationId, p.end, ...(q.channel ? [q.channel] : []), ...(segment?.params ?? [])],
    );
    // Sessions: messages of one customer on one channel, both directions, gaps of at most 30 minutes;
    // a phone call's messages are one session of their own, lasting the call's CallDuration once Twilio sent it.
    const sessions = await em.execute<Array<{ channel: string; sessions: number; seconds: number; messages: number }>>(
      `with c as (
         select m.customer_id, m.channel, m.created_at, case when m.channel = 'voice' then coalesce(m.metadata ->> 'call_sid', vc.call_sid) end as call_sid
           from messages m
           left join voice_calls vc on m.channel = 'voice' and vc.execution_id = m.execution_id
          where m.organization_id = ? and m.created_at >= ? and m.created_at < ?${q.channel ? ' and m.channel = ?' : ''}${segment ? ` and m.customer_id in (${segment.sql})` : ''}),
       m as (
         select customer_id, channel, created_at, call_sid,
                case when lag(created_at) over w is null or (call_sid is null and created_at - lag(created_at) over w > interval '${SESSION_GAP}') then 1 else 0 end as starts
           from c
         window w as (partition by customer_id, channel, call_sid order by created_at)),
       s as (select customer_id, channel, created_at, call_sid, sum(starts) over (partition by customer_id, channel, call_sid order by created_at) as n from m),
       t as (select channel, call_sid, extract(epoch from max(created_at) - min(created_at)) as seconds, count(*) as messages from s group by customer_id, channel, call_sid, n)
       select t.channel, count(*)::int as sessions, sum(coalesce(vc.duration_seconds, t.seconds))::float8 as seconds, sum(t.messages)::int as messages
         from t left join voice_calls vc on vc.call_sid = t.call_sid and vc.organization_id = ?
        group by t.channel`,
      [organizationId, p.start, p.end, ...(q.channel ? [q.channel] : []), ...(segment?.params ?? []), organizationId],
    );
    const scores = await satisfactionByChannel(em, organizationId, p, q.channel, segment);
    // Active customers handed to a person (docs/handoff.md) by a handoff started in the period.
    const [handed] = await em.execute<Array<{ n: number }>>(
      `select count(distinct h.customer_id)::int as n from customer_handoffs h
        where h.organization_id = ? and h.started_at >= ? and h.started_at < ? and h.customer_id in (${active.ids.sql})`,
      [organizationId, p.start, p.end, ...active.ids.params],
    );
    return { active, counts: counts ?? { total: 0, fresh: 0 }, sessions, scores, handedOff: handed?.n ?? 0 };
  };
  const [cur, prev] = await Promise.all([one(period), one(prevPeriod)]);
  const sessionCount = cur.sessions.reduce((s, r) => s + r.sessions, 0);
  const round2 = (n: number) => Math.round(n * 100) / 100;
  const allScores = cur.scores.get('') ?? null;
  const channels = new Set([...cur.active.byChannel.keys(), ...cur.sessions.map((s) => s.channel)]);
  return {
    period: periodOut(period),
    engagement: {
      total_customers: cur.counts.total,
      active_customers: cur.active.total,
      new_customers: cur.counts.fresh,
      returning_customers: cur.active.total - cur.counts.fresh,
      average_session_duration: sessionCount === 0 ? 0 : round2(cur.sessions.reduce((s, r) => s + r.seconds, 0) / sessionCount),
      average_messages_per_session: sessionCount === 0 ? 0 : round2(cur.sessions.reduce((s, r) => s + r.messages, 0) / sessionCount),
      customer_satisfaction: allScores ? customerSatisfaction(allScores) : null,
      net_promoter_score: allScores ? netPromoterScore(allScores) : null,
      handoff_rate: cur.active.total === 0 ? 0 : Math.round((cur.handedOff / cur.active.total) * 10_000) / 10_000,
      engagement_by_channel: Object.fromEntries(
        [...channels].sort().map((ch) => {
          const s = cur.sessions.find((r) => r.channel === ch);
          const sc = cur.scores.get(ch);
          return [
            ch,
            {
              customers: cur.active.byChannel.get(ch) ?? 0,
              average_session_duration: s && s.sessions > 0 ? round2(s.seconds / s.sessions) : 0,
              satisfaction: sc ? customerSatisfaction(sc) : null,
            },
          ];
        }),
      ),
    },
    trends: {
      customer_growth: trend(cur.counts.fresh, prev.counts.fresh),
      engagement_trend: trend(cur.active.total, prev.active.total),
      satisfaction_trend: trend(allScores ? customerSatisfaction(allScores) : null, prev.scores.get('') ? customerSatisfaction(prev.scores.get('')!) : null),
    },
  };
}

/**
 * Rating/NPS counters per channel ('' = all). Without a segment they come from the hourly
 * rollups; a segment (a set of customers) is not a rollup dimension, so its answers are read
 * from the form steps of its customers' executions in the period.
 */
async function satisfactionByChannel(em: EntityManager, organizationId: string, p: Period, channel: string | undefined, segment: { sql: string; params: unknown[] } | undefined) {
  const scope: Scope = { organizationId, ...(channel ? { channel } : {}) };
  if (!segment) {
    const byChannel = await sumCounters(em, scope, p, 'channel');
    const all = await sumCounters(em, scope, p).then(totalOf);
    return new Map<string, Counters>([['', all], ...byChannel]);
  }
  const rows = await em.execute<Array<Counters & { channel: string }>>(
    `select e.channel, ${scoreSums('s')}
       from executions e join execution_steps s on s.execution_id = e.id
      where e.organization_id = ? and e.started_at >= ? and e.started_at < ? and s.output -> 'scores' is not null${channel ? ' and e.channel = ?' : ''}
        and e.customer_id in (${segment.sql})
      group by rollup (e.channel)`,
    [organizationId, p.start, p.end, ...(channel ? [channel] : []), ...segment.params],
  );
  return new Map(rows.map((r) => [r.channel ?? '', r as Counters]));
}
