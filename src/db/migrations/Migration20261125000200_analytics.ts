import { Migration } from '@mikro-orm/migrations';

/**
 * Analytics rollups (see docs/analytics.md), kept by row triggers in the transaction that
 * writes the fact, so they are never stale and any code path that records an execution,
 * a step or a message counts it:
 *
 * - `analytics_hourly`: organization × workflow × trigger × channel × UTC hour (of the
 *   execution's start, of the message's creation): executions by final status and error
 *   type, duration sum, a log-scale latency histogram, messages in/out, rating and NPS
 *   answers. A step and a form answer count in the hour its execution started. `workflow_id` and
 *   `trigger_id` are '' for messages outside any execution / executions without a trigger.
 * - `analytics_node_hourly`: steps per workflow node and hour.
 * - `analytics_customer_days`: per customer, channel, workflow ('' = the organization's
 *   messages) and UTC day, for distinct customer counts.
 *
 * An execution counts once: the update trigger fires only when `status` or `duration_ms`
 * actually changes, and it moves the row's contribution (old out, new in), so a retried
 * finish (a no-op update) adds nothing. `analytics_rebuild()` recomputes everything from the
 * facts; this migration uses it as the backfill (and the benchmark after its COPY seed).
 *
 * Latency histogram: bucket 0 holds 0 ms; a duration d ≥ 1 ms goes to bucket
 * 1 + ceil(ln d / ln γ) with γ = 1.02 / 0.98, whose representative value 2γ^(b−1)/(γ+1)
 * is within 2 % of every duration in the bucket. The array's subscripts are the bucket
 * numbers (PostgreSQL arrays keep their lower bound), so it stays as short as the range of
 * durations seen in the hour.
 */
export class Migration20261125000200_analytics extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table customers add column tags text[] not null default '{}';
      create index customers_tags_idx on customers using gin (tags);
      create index executions_running_idx on executions (organization_id, workflow_id) where status = 'running';
      create index executions_org_started_idx on executions (organization_id, started_at);
      create index messages_execution_idx on messages (execution_id, created_at) where execution_id is not null;

      create table analytics_hourly (
        organization_id text not null,
        workflow_id text not null,
        hour timestamptz not null,
        trigger_id text not null,
        channel text not null,
        started integer not null default 0,
        succeeded integer not null default 0,
        failed integer not null default 0,
        cancelled integer not null default 0,
        timeout_errors integer not null default 0,
        api_errors integer not null default 0,
        validation_errors integer not null default 0,
        duration_sum_ms bigint not null default 0,
        latency_hist integer[] not null default '{}',
        messages_in integer not null default 0,
        messages_out integer not null default 0,
        rating_sum integer not null default 0,
        rating_count integer not null default 0,
        nps_promoters integer not null default 0,
        nps_detractors integer not null default 0,
        nps_count integer not null default 0,
        primary key (organization_id, workflow_id, hour, trigger_id, channel)
      );
      create index analytics_hourly_org_hour_idx on analytics_hourly (organization_id, hour);

      create table analytics_node_hourly (
        organization_id text not null,
        workflow_id text not null,
        hour timestamptz not null,
        node_id text not null,
        type text not null,
        steps integer not null default 0,
        failed_steps integer not null default 0,
        duration_sum_ms bigint not null default 0,
        primary key (organization_id, workflow_id, hour, node_id, type)
      );

      create table analytics_customer_days (
        organization_id text not null,
        workflow_id text not null,
        day date not null,
        channel text not null,
        customer_id text not null,
        executions integer not null default 0,
        messages_in integer not null default 0,
        messages_out integer not null default 0,
        primary key (organization_id, workflow_id, day, channel, customer_id)
      );

      create function analytics_latency_bucket(ms integer) returns integer language sql immutable as $$
        select case when coalesce(ms, 0) <= 0 then 0 else 1 + ceil(ln(ms) / ln(1.02 / 0.98))::integer end
      $$;

      create function analytics_hist_add(h integer[], b integer, n integer) returns integer[] language plpgsql immutable as $$
      begin
        h[b] := coalesce(h[b], 0) + n;
        return h;
      end $$;

      create function analytics_hist_build(buckets integer[]) returns integer[] language plpgsql immutable as $$
      declare
        h integer[] := '{}';
        b integer;
      begin
        foreach b in array coalesce(buckets, '{}') loop
          h[b] := coalesce(h[b], 0) + 1;
        end loop;
        return h;
      end $$;

      create function analytics_add_execution(e executions, s integer, with_customer boolean) returns void language plpgsql as $$
      declare
        fin boolean := e.status in ('success', 'failed');
      begin
        insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, started, succeeded, failed, cancelled,
                                           timeout_errors, api_errors, validation_errors, duration_sum_ms, latency_hist)
        values (e.organization_id, e.workflow_id, date_trunc('hour', e.started_at, 'UTC'), coalesce(e.trigger_id, ''), e.channel,
                case when with_customer then s else 0 end,
                case when e.status = 'success' then s else 0 end,
                case when e.status = 'failed' then s else 0 end,
                case when e.status = 'cancelled' then s else 0 end,
                case when e.status = 'failed' and e.error_type = 'timeout' then s else 0 end,
                case when e.status = 'failed' and e.error_type = 'api_error' then s else 0 end,
                case when e.status = 'failed' and e.error_type = 'validation_error' then s else 0 end,
                case when fin then s * coalesce(e.duration_ms, 0) else 0 end,
                case when fin then analytics_hist_add('{}', analytics_latency_bucket(e.duration_ms), s) else '{}' end)
        on conflict (organization_id, workflow_id, hour, trigger_id, channel) do update set
          started = a.started + excluded.started,
          succeeded = a.succeeded + excluded.succeeded,
          failed = a.failed + excluded.failed,
          cancelled = a.cancelled + excluded.cancelled,
          timeout_errors = a.timeout_errors + excluded.timeout_errors,
          api_errors = a.api_errors + excluded.api_errors,
          validation_errors = a.validation_errors + excluded.validation_errors,
          duration_sum_ms = a.duration_sum_ms + excluded.duration_sum_ms,
          latency_hist = case when fin then analytics_hist_add(a.latency_hist, analytics_latency_bucket(e.duration_ms), s) else a.latency_hist end;
        if with_customer and e.customer_id is not null then
          insert into analytics_customer_days as d (organization_id, workflow_id, day, channel, customer_id, executions)
          values (e.organization_id, e.workflow_id, (e.started_at at time zone 'UTC')::date, e.channel, e.customer_id, s)
          on conflict (organization_id, workflow_id, day, channel, customer_id) do update set executions = d.executions + excluded.executions;
        end if;
      end $$;

      create function analytics_add_message(m messages, s integer, with_customer boolean) returns void language plpgsql as $$
      declare
        wf text;
        tr text;
      begin
        if m.execution_id is not null then
          select workflow_id, trigger_id into wf, tr from executions where id = m.execution_id;
        end if;
        insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, messages_in, messages_out)
        values (m.organization_id, coalesce(wf, ''), date_trunc('hour', m.created_at, 'UTC'), coalesce(tr, ''), m.channel,
                case when m.direction = 'inbound' then s else 0 end, case when m.direction = 'outbound' then s else 0 end)
        on conflict (organization_id, workflow_id, hour, trigger_id, channel) do update set
          messages_in = a.messages_in + excluded.messages_in, messages_out = a.messages_out + excluded.messages_out;
        if with_customer then
          insert into analytics_customer_days as d (organization_id, workflow_id, day, channel, customer_id, messages_in, messages_out)
          values (m.organization_id, '', (m.created_at at time zone 'UTC')::date, m.channel, m.customer_id,
                  case when m.direction = 'inbound' then s else 0 end, case when m.direction = 'outbound' then s else 0 end)
          on conflict (organization_id, workflow_id, day, channel, customer_id) do update set
            messages_in = d.messages_in + excluded.messages_in, messages_out = d.messages_out + excluded.messages_out;
        end if;
      end $$;

      create function analytics_on_execution() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          perform analytics_add_execution(new, 1, true);
        else
          perform analytics_add_execution(old, -1, false);
          perform analytics_add_execution(new, 1, false);
        end if;
        return null;
      end $$;
      create trigger executions_analytics_insert after insert on executions for each row execute function analytics_on_execution();
      create trigger executions_analytics_update after update of status, duration_ms, error_type on executions for each row
        when (old.status is distinct from new.status or old.duration_ms is distinct from new.duration_ms or old.error_type is distinct from new.error_type)
        execute function analytics_on_execution();

      create function analytics_on_message() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
          perform analytics_add_message(new, 1, true);
        else
          perform analytics_add_message(old, -1, false);
          perform analytics_add_message(new, 1, false);
        end if;
        return null;
      end $$;
      create trigger messages_analytics_insert after insert on messages for each row execute function analytics_on_message();
      create trigger messages_analytics_update after update of execution_id on messages for each row
        when (old.execution_id is distinct from new.execution_id) execute function analytics_on_message();

      -- Form steps carry the answers of rating (1-5) and nps (0-10) fields in output.scores.
      create function analytics_add_scores(st execution_steps, e executions) returns void language plpgsql as $$
      declare
        rating integer[];
        nps integer[];
      begin
        select array_agg(v::integer) into rating from jsonb_array_elements_text(coalesce(st.output #> '{scores,rating}', '[]')) v;
        select array_agg(v::integer) into nps from jsonb_array_elements_text(coalesce(st.output #> '{scores,nps}', '[]')) v;
        if rating is null and nps is null then return; end if;
        insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, rating_sum, rating_count, nps_promoters, nps_detractors, nps_count)
        values (e.organization_id, e.workflow_id, date_trunc('hour', e.started_at, 'UTC'), coalesce(e.trigger_id, ''), e.channel,
                coalesce((select sum(x) from unnest(rating) x), 0), coalesce(cardinality(rating), 0),
                coalesce((select count(*) from unnest(nps) x where x >= 9), 0), coalesce((select count(*) from unnest(nps) x where x <= 6), 0),
                coalesce(cardinality(nps), 0))
        on conflict (organization_id, workflow_id, hour, trigger_id, channel) do update set
          rating_sum = a.rating_sum + excluded.rating_sum, rating_count = a.rating_count + excluded.rating_count,
          nps_promoters = a.nps_promoters + excluded.nps_promoters, nps_detractors = a.nps_detractors + excluded.nps_detractors,
          nps_count = a.nps_count + excluded.nps_count;
      end $$;

      create function analytics_on_step() returns trigger language plpgsql as $$
      declare
        e executions;
      begin
        select * into e from executions where id = new.execution_id;
        insert into analytics_node_hourly as a (organization_id, workflow_id, hour, node_id, type, steps, failed_steps, duration_sum_ms)
        values (new.organization_id, e.workflow_id, date_trunc('hour', e.started_at, 'UTC'), new.node_id, new.type, 1,
                case when new.status = 'failed' then 1 else 0 end, coalesce(new.duration_ms, 0))
        on conflict (organization_id, workflow_id, hour, node_id, type) do update set
          steps = a.steps + 1, failed_steps = a.failed_steps + excluded.failed_steps, duration_sum_ms = a.duration_sum_ms + excluded.duration_sum_ms;
        if new.output ? 'scores' then perform analytics_add_scores(new, e); end if;
        return null;
      end $$;
      create trigger execution_steps_analytics after insert on execution_steps for each row execute function analytics_on_step();

      -- Recomputes every rollup from the facts (backfill; bulk loads that bypass the triggers).
      create function analytics_rebuild() returns void language plpgsql as $$
      begin
        truncate analytics_hourly, analytics_node_hourly, analytics_customer_days;
        insert into analytics_hourly (organization_id, workflow_id, hour, trigger_id, channel, started, succeeded, failed, cancelled,
                                      timeout_errors, api_errors, validation_errors, duration_sum_ms, latency_hist)
        select organization_id, workflow_id, date_trunc('hour', started_at, 'UTC'), coalesce(trigger_id, ''), channel, count(*),
               count(*) filter (where status = 'success'), count(*) filter (where status = 'failed'), count(*) filter (where status = 'cancelled'),
               count(*) filter (where status = 'failed' and error_type = 'timeout'),
               count(*) filter (where status = 'failed' and error_type = 'api_error'),
               count(*) filter (where status = 'failed' and error_type = 'validation_error'),
               coalesce(sum(duration_ms) filter (where status in ('success', 'failed')), 0),
               analytics_hist_build(array_agg(analytics_latency_bucket(duration_ms)) filter (where status in ('success', 'failed')))
          from executions group by 1, 2, 3, 4, 5;
        insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, messages_in, messages_out)
        select m.organization_id, coalesce(e.workflow_id, ''), date_trunc('hour', m.created_at, 'UTC'), coalesce(e.trigger_id, ''), m.channel,
               count(*) filter (where m.direction = 'inbound'), count(*) filter (where m.direction = 'outbound')
          from messages m left join executions e on e.id = m.execution_id group by 1, 2, 3, 4, 5
        on conflict (organization_id, workflow_id, hour, trigger_id, channel) do update set
          messages_in = excluded.messages_in, messages_out = excluded.messages_out;
        insert into analytics_node_hourly (organization_id, workflow_id, hour, node_id, type, steps, failed_steps, duration_sum_ms)
        select s.organization_id, e.workflow_id, date_trunc('hour', e.started_at, 'UTC'), s.node_id, s.type, count(*),
               count(*) filter (where s.status = 'failed'), coalesce(sum(s.duration_ms), 0)
          from execution_steps s join executions e on e.id = s.execution_id group by 1, 2, 3, 4, 5;
        perform analytics_add_scores(s, e) from execution_steps s join executions e on e.id = s.execution_id where s.output ? 'scores';
        insert into analytics_customer_days (organization_id, workflow_id, day, channel, customer_id, executions)
        select organization_id, workflow_id, (started_at at time zone 'UTC')::date, channel, customer_id, count(*)
          from executions where customer_id is not null group by 1, 2, 3, 4, 5;
        insert into analytics_customer_days (organization_id, workflow_id, day, channel, customer_id, messages_in, messages_out)
        select organization_id, '', (created_at at time zone 'UTC')::date, channel, customer_id,
               count(*) filter (where direction = 'inbound'), count(*) filter (where direction = 'outbound')
          from messages group by 1, 2, 3, 4, 5;
      end $$;

      select analytics_rebuild();
    `);
  }
}
