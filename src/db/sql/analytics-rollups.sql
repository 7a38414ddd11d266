-- The analytics rollup functions as they are now: the one definition of each (docs/analytics.md,
-- docs/architecture-reports-analytics.md). Applied as a whole by the latest migration that
-- changes one of them (src/db/rollup-functions.ts); earlier migrations keep the definitions
-- an existing database ran. Every statement is `create or replace` (the shard functions' block
-- runs such statements), so applying it again is a no-op. Tables, indexes and triggers stay
-- in the migrations: only function bodies live here.


-- Latency histogram (docs/analytics.md): bucket 0 holds 0 ms; d >= 1 ms goes to bucket 1 + ceil(ln d / ln γ),
-- γ = (1 + e) / (1 - e) with e = LATENCY_RELATIVE_ERROR (src/modules/metrics/analytics-metrics.ts; a unit
-- test checks the two agree).
create or replace function analytics_latency_bucket(ms integer) returns integer language sql immutable as $$
  select case when coalesce(ms, 0) <= 0 then 0 else 1 + ceil(ln(ms) / ln(1.02 / 0.98))::integer end
$$;

create or replace function analytics_hist_add(h integer[], b integer, n integer) returns integer[] language plpgsql immutable as $$
begin
  h[b] := coalesce(h[b], 0) + n;
  return h;
end $$;

create or replace function analytics_hist_build(buckets integer[]) returns integer[] language plpgsql immutable as $$
declare
  h integer[] := '{}';
  b integer;
begin
  foreach b in array coalesce(buckets, '{}') loop
    h[b] := coalesce(h[b], 0) + 1;
  end loop;
  return h;
end $$;

-- Adds histogram (or any subscripted counter array) h2 into h, subscript by subscript.
create or replace function analytics_hist_merge(h integer[], h2 integer[]) returns integer[] language plpgsql immutable as $$
declare
  i integer;
begin
  if cardinality(h2) = 0 then return h; end if;
  for i in array_lower(h2, 1) .. array_upper(h2, 1) loop
    if coalesce(h2[i], 0) <> 0 then h[i] := coalesce(h[i], 0) + h2[i]; end if;
  end loop;
  return h;
end $$;

-- The array whose subscript b[k] holds the sum of n[k] (the rebuild's sums of hours into days).
create or replace function analytics_hist_weighted(b integer[], n integer[]) returns integer[] language plpgsql immutable as $$
declare
  h integer[] := '{}';
  k integer;
begin
  for k in 1 .. coalesce(cardinality(b), 0) loop
    if b[k] is not null and coalesce(n[k], 0) <> 0 then h[b[k]] := coalesce(h[b[k]], 0) + n[k]; end if;
  end loop;
  return h;
end $$;

-- At most this many rows per key: past it, transactions share rows (and wait for each other).
create or replace function analytics_shard_limit() returns integer language sql immutable as 'select 8';

-- A shard number to open for key k, whose committed shards (all held by other
-- transactions) are `taken`. Another transaction may be opening one right now, invisible
-- here until it commits: an advisory lock on (key, shard) keeps two from opening the
-- same one (and waiting for each other). The first row of a key is shard 0, without one.
create or replace function analytics_new_shard(k text, taken smallint[]) returns smallint language plpgsql as $$
begin
  if taken is null then return 0; end if;
  for s in 0 .. analytics_shard_limit() - 1 loop
    if not s = any(taken) and pg_try_advisory_xact_lock(hashtext(k), s) then return s; end if;
  end loop;
  return pg_backend_pid() % analytics_shard_limit();
end $$;

-- The shard of a sharded rollup table this transaction adds to: the first one no other
-- transaction holds (now locked for this one), else a new one. One function per table
-- rather than one with dynamic SQL: EXECUTE plans its statement at every call, and this
-- runs in every commit that touches an execution. The functions differ only in their table
-- and key, so this block writes each one from one template when the file is applied: each is
-- an ordinary function whose statements are planned once, as if written out here. A row:
-- the function, its table, the tag of its lock keys, its arguments, and the key columns
-- they stand for, in the same order. (The daily tier shards like the hourly one: a day's row
-- is as hot as its hours' rows.)
do $template$
declare
  f record;
  cond text;
  args text;
begin
  for f in select * from (values
    ('analytics_hourly_shard', 'analytics_hourly', 'hourly', 'o text, w text, h timestamptz, t text, c text', 'organization_id, workflow_id, hour, trigger_id, channel'),
    ('analytics_node_shard', 'analytics_node_hourly', 'node', 'o text, w text, h timestamptz, nd text, ty text', 'organization_id, workflow_id, hour, node_id, type'),
    ('analytics_daily_shard', 'analytics_daily', 'daily', 'o text, w text, d date, t text, c text', 'organization_id, workflow_id, day, trigger_id, channel'),
    ('analytics_returns_shard', 'analytics_customer_returns', 'returns', 'o text, w text, c text, d date, since date', 'organization_id, workflow_id, channel, day, since_day')
  ) v(fn, tbl, tag, params, cols) loop
    select string_agg(format('%s = %s', col, split_part(param, ' ', 1)), ' and ' order by i), string_agg(split_part(param, ' ', 1), ', ' order by i)
      into cond, args
      from unnest(string_to_array(f.cols, ', '), string_to_array(f.params, ', ')) with ordinality k(col, param, i);
    execute format($fn$create or replace function %1$I(%2$s) returns smallint language plpgsql as $$
declare
  s smallint;
  taken smallint[];
begin
  select shard into s from %3$I
   where %4$s
   order by shard limit 1 for update skip locked;
  if found then return s; end if;
  select array_agg(shard) into taken from %3$I
   where %4$s;
  return analytics_new_shard(concat_ws('/', %5$L, %6$s), taken);
end $$
$fn$, f.fn, f.params, f.tbl, cond, f.tag, args);
  end loop;
end $template$;

-- Adds counters to the day's row of a key. v[1..15] are the counters; an execution's rows
-- (analytics_execution_daily) add v[16] = the UTC hour of day of its start, whose slot of
-- started_by_hour takes v[1], and up to two latency histogram changes: bucket v[17] by v[18],
-- bucket v[19] by v[20] (a finish's old and new duration). Missing entries add nothing.
-- The latency histogram change of such a v: bucket v[17] by v[18], bucket v[19] by v[20].
create or replace function analytics_hist_change(v integer[]) returns integer[] language plpgsql immutable as $$
declare
  hist integer[] := '{}';
begin
  if v[17] is not null and coalesce(v[18], 0) <> 0 then hist[v[17]] := v[18]; end if;
  if v[19] is not null and coalesce(v[20], 0) <> 0 then hist[v[19]] := coalesce(hist[v[19]], 0) + v[20]; end if;
  return hist;
end $$;

create or replace function analytics_add_daily(o text, w text, d date, t text, c text, v integer[]) returns void language plpgsql as $$
declare
  hrs integer[] := '{}';
  hist integer[] := analytics_hist_change(v);
begin
  if v[16] is not null and coalesce(v[1], 0) <> 0 then hrs[v[16]] := v[1]; end if;
  insert into analytics_daily as a (organization_id, workflow_id, day, trigger_id, channel, shard, started, succeeded, failed, cancelled,
                                    timeout_errors, api_errors, validation_errors, duration_sum_ms, messages_in, messages_out,
                                    rating_sum, rating_count, nps_promoters, nps_detractors, nps_count, started_by_hour, latency_hist)
  values (o, w, d, t, c, analytics_daily_shard(o, w, d, t, c), v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15],
          hrs, hist)
  on conflict (organization_id, workflow_id, day, trigger_id, channel, shard) do update set
    -- Most upserts (messages, answers, a finish's start) change neither array: no call then.
    started_by_hour = case when cardinality(excluded.started_by_hour) = 0 then a.started_by_hour
                           else analytics_hist_merge(a.started_by_hour, excluded.started_by_hour) end,
    latency_hist = case when cardinality(excluded.latency_hist) = 0 then a.latency_hist else analytics_hist_merge(a.latency_hist, excluded.latency_hist) end,
    started = a.started + excluded.started, succeeded = a.succeeded + excluded.succeeded, failed = a.failed + excluded.failed,
    cancelled = a.cancelled + excluded.cancelled, timeout_errors = a.timeout_errors + excluded.timeout_errors,
    api_errors = a.api_errors + excluded.api_errors, validation_errors = a.validation_errors + excluded.validation_errors,
    duration_sum_ms = a.duration_sum_ms + excluded.duration_sum_ms, messages_in = a.messages_in + excluded.messages_in,
    messages_out = a.messages_out + excluded.messages_out, rating_sum = a.rating_sum + excluded.rating_sum,
    rating_count = a.rating_count + excluded.rating_count, nps_promoters = a.nps_promoters + excluded.nps_promoters,
    nps_detractors = a.nps_detractors + excluded.nps_detractors, nps_count = a.nps_count + excluded.nps_count;
end $$;

-- Distinct customers, exactly, without a set per period (docs/analytics.md): for each
-- customer-day of a workflow, the previous day the customer was seen (`since`,
-- '-infinity' for none). The customers of days [a, b) are the customer-days in it whose
-- `since` < a: each customer counts once, on its first day in the period. Counted per
-- (channel, day, since) and, under channel '', for all channels (a customer seen on two
-- channels in a day counts once there). Sharded like the hourly counters.
create or replace function analytics_count_returning(o text, w text, c text, d date, since date, n integer) returns void language plpgsql as $$
declare
  s smallint := analytics_returns_shard(o, w, c, d, since);
begin
  insert into analytics_customer_returns as r (organization_id, workflow_id, channel, day, since_day, shard, customers)
  values (o, w, c, d, since, s, n)
  on conflict (organization_id, workflow_id, channel, day, since_day, shard) do update set customers = r.customers + excluded.customers;
end $$;

-- A customer-day row (workflow w, channel c, day d) was just created: count it, and move
-- the customer's next day (a late write for an earlier day) to `since` = d.
create or replace function analytics_customer_day_added(o text, w text, c text, cust text, d date) returns void language plpgsql as $$
declare
  prev_c date;
  next_c date;
  prev_a date;
  next_a date;
  other boolean;
begin
  -- Two transactions adding days of one customer (around midnight, or on two channels) would
  -- each miss the other's uncommitted day: the second waits here, and the lookup below (a new
  -- snapshot) sees the first's day. Only a customer's first execution of a day takes it.
  perform pg_advisory_xact_lock(hashtext(concat_ws('/', 'customer-days', o, w, cust)));
  select max(day) filter (where channel = c and day < d), min(day) filter (where channel = c and day > d),
         max(day) filter (where day < d), min(day) filter (where day > d), coalesce(bool_or(day = d and channel <> c), false)
    into prev_c, next_c, prev_a, next_a, other
    from analytics_customer_days where organization_id = o and workflow_id = w and customer_id = cust;
  perform analytics_count_returning(o, w, c, d, coalesce(prev_c, '-infinity'), 1);
  if next_c is not null then
    perform analytics_count_returning(o, w, c, next_c, coalesce(prev_c, '-infinity'), -1);
    perform analytics_count_returning(o, w, c, next_c, d, 1);
  end if;
  if other then return; end if;
  perform analytics_count_returning(o, w, '', d, coalesce(prev_a, '-infinity'), 1);
  if next_a is not null then
    perform analytics_count_returning(o, w, '', next_a, coalesce(prev_a, '-infinity'), -1);
    perform analytics_count_returning(o, w, '', next_a, d, 1);
  end if;
end $$;

-- An execution's contribution to its day's counters (analytics_add_daily's order), s = 1 or -1.
-- Apart from analytics_add_execution: a finish moves the contribution within one day's key,
-- one upsert of the difference instead of two (analytics_on_execution).
create or replace function analytics_execution_daily(e executions, s integer, with_customer boolean) returns integer[] language sql immutable as $$
  select array[
    case when with_customer then s else 0 end,
    case when e.status = 'success' then s else 0 end,
    case when e.status = 'failed' then s else 0 end,
    case when e.status = 'cancelled' then s else 0 end,
    case when e.status = 'failed' and e.error_type = 'timeout' then s else 0 end,
    case when e.status = 'failed' and e.error_type = 'api_error' then s else 0 end,
    case when e.status = 'failed' and e.error_type = 'validation_error' then s else 0 end,
    case when e.status in ('success', 'failed') then s * coalesce(e.duration_ms, 0) else 0 end, 0, 0, 0, 0, 0, 0, 0,
    extract(hour from e.started_at at time zone 'UTC')::integer,
    analytics_latency_bucket(e.duration_ms), case when e.status in ('success', 'failed') then s else 0 end]
$$;

-- A finish within one day's key: the difference of the counters, the hour of day (started does
-- not change), the old duration's histogram bucket out and the new one in. PL/pgSQL, not SQL:
-- a SQL function with a FROM cannot be inlined and is planned again at every call (0.8 ms of
-- every finish), while PL/pgSQL keeps its plans for the session.
create or replace function analytics_execution_daily_change(old executions, new executions) returns integer[] language plpgsql immutable as $$
declare
  o integer[] := analytics_execution_daily(old, -1, false);
  n integer[] := analytics_execution_daily(new, 1, false);
  d integer[] := '{}';
begin
  for i in 1 .. 15 loop
    d[i] := o[i] + n[i];
  end loop;
  return d || n[16:16] || o[17:18] || n[17:18];
end $$;

create or replace function analytics_execution_day(e executions) returns date language sql immutable as $$
  select (e.started_at at time zone 'UTC')::date
$$;

-- Adds an execution's counters to its hour (a key of analytics_hourly): v[1..10] in
-- analytics_execution_daily's order (v[9], v[10]: the messages in and out counted with it),
-- and the latency histogram change `hist`.
create or replace function analytics_add_hourly(o text, w text, h timestamptz, t text, c text, v integer[], hist integer[]) returns void language plpgsql as $$
begin
  insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, shard, started, succeeded, failed, cancelled,
                                     timeout_errors, api_errors, validation_errors, duration_sum_ms, messages_in, messages_out, latency_hist)
  values (o, w, h, t, c, analytics_hourly_shard(o, w, h, t, c), v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], coalesce(v[9], 0), coalesce(v[10], 0), hist)
  on conflict (organization_id, workflow_id, hour, trigger_id, channel, shard) do update set
    started = a.started + excluded.started,
    messages_in = a.messages_in + excluded.messages_in,
    messages_out = a.messages_out + excluded.messages_out,
    succeeded = a.succeeded + excluded.succeeded,
    failed = a.failed + excluded.failed,
    cancelled = a.cancelled + excluded.cancelled,
    timeout_errors = a.timeout_errors + excluded.timeout_errors,
    api_errors = a.api_errors + excluded.api_errors,
    validation_errors = a.validation_errors + excluded.validation_errors,
    duration_sum_ms = a.duration_sum_ms + excluded.duration_sum_ms,
    latency_hist = case when cardinality(excluded.latency_hist) = 0 then a.latency_hist else analytics_hist_merge(a.latency_hist, excluded.latency_hist) end;
end $$;

-- m_in: the inbound messages counted with the execution, into its hour (analytics_inbound_rolled_with).
create or replace function analytics_add_execution(e executions, s integer, with_customer boolean, m_in integer default 0) returns void language plpgsql as $$
declare
  fin boolean := e.status in ('success', 'failed');
  h timestamptz := date_trunc('hour', e.started_at, 'UTC');
  dy date := (e.started_at at time zone 'UTC')::date;
  tr text := coalesce(e.trigger_id, '');
  -- The hour's counters are the day's first ten (started .. messages_out); the hour adds the latency histogram.
  v integer[] := analytics_execution_daily(e, s, with_customer);
  fresh boolean;
begin
  v[9] := m_in;
  perform analytics_add_hourly(e.organization_id, e.workflow_id, h, tr, e.channel, v,
                              case when fin then analytics_hist_add('{}', analytics_latency_bucket(e.duration_ms), s) else '{}' end);
  if with_customer and e.customer_id is not null then
    insert into analytics_customer_days as d (organization_id, workflow_id, day, channel, customer_id, executions)
    values (e.organization_id, e.workflow_id, dy, e.channel, e.customer_id, s)
    on conflict (organization_id, workflow_id, day, channel, customer_id) do update set executions = d.executions + excluded.executions
    returning (d.xmax = 0) into fresh;
    -- xmax = 0: the row was inserted, not updated (the customer's first execution of the day).
    if fresh then perform analytics_customer_day_added(e.organization_id, e.workflow_id, e.channel, e.customer_id, dy); end if;
  end if;
end $$;

-- A change of an execution (its finish) that keeps its hour's key: one upsert of the
-- difference into the hour (the day's first eight counters and the histogram change) and one
-- into the day, instead of taking the old row out and putting the new one in, tier by tier.
create or replace function analytics_change_execution(old executions, new executions) returns void language plpgsql as $$
declare
  h timestamptz := date_trunc('hour', new.started_at, 'UTC');
  tr text := coalesce(new.trigger_id, '');
  v integer[] := analytics_execution_daily_change(old, new);
  hist integer[] := analytics_hist_change(v);
begin
  -- Queued to running changes no counter: nothing to write.
  if v[1:8] = '{0,0,0,0,0,0,0,0}' and cardinality(hist) = 0 then return; end if;
  perform analytics_add_hourly(new.organization_id, new.workflow_id, h, tr, new.channel, v, hist);
  perform analytics_add_daily(new.organization_id, new.workflow_id, analytics_execution_day(new), tr, new.channel, v);
end $$;

-- An inbound message and the execution it started, written together (the inbound write sets
-- `rollup_with_execution`), are counted by one upsert per tier: the execution's insert adds
-- the message to its own hour and day (analytics_on_execution), and the message's insert
-- adds only its customer's day (analytics_on_message). Both sides ask the one question
-- below, so exactly one counts the message: the execution started by the message, linked
-- from it, of its channel and its hour (a message of another hour is counted on its own). A
-- message linked later (a debounced burst's) never carries the flag.
create or replace function analytics_rolled_together(m messages, e executions) returns boolean language sql stable as $$
  select m.rollup_with_execution and m.execution_id = e.id and e.message_id = m.id and m.organization_id = e.organization_id
     and m.channel = e.channel and date_trunc('hour', m.created_at, 'UTC') = date_trunc('hour', e.started_at, 'UTC')
$$;

create or replace function analytics_inbound_rolled_with(e executions) returns integer language sql stable as $$
  select count(*)::integer from messages m where m.id = e.message_id and analytics_rolled_together(m, e)
$$;

create or replace function analytics_message_rolled_with_execution(m messages) returns boolean language sql stable as $$
  select exists (select 1 from executions e where e.id = m.execution_id and analytics_rolled_together(m, e))
$$;

-- A message's count on its customer's day (analytics_customer_days, workflow '').
create or replace function analytics_add_message_customer(m messages, s integer) returns void language plpgsql as $$
begin
  insert into analytics_customer_days as d (organization_id, workflow_id, day, channel, customer_id, messages_in, messages_out)
  values (m.organization_id, '', (m.created_at at time zone 'UTC')::date, m.channel, m.customer_id,
          case when m.direction = 'inbound' then s else 0 end, case when m.direction = 'outbound' then s else 0 end)
  on conflict (organization_id, workflow_id, day, channel, customer_id) do update set
    messages_in = d.messages_in + excluded.messages_in, messages_out = d.messages_out + excluded.messages_out;
end $$;

create or replace function analytics_add_message(m messages, s integer, with_customer boolean) returns void language plpgsql as $$
declare
  wf text;
  tr text;
  h timestamptz := date_trunc('hour', m.created_at, 'UTC');
begin
  if m.execution_id is not null then
    select workflow_id, trigger_id into wf, tr from executions where id = m.execution_id;
  end if;
  wf := coalesce(wf, '');
  tr := coalesce(tr, '');
  insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, shard, messages_in, messages_out)
  values (m.organization_id, wf, h, tr, m.channel, analytics_hourly_shard(m.organization_id, wf, h, tr, m.channel),
          case when m.direction = 'inbound' then s else 0 end, case when m.direction = 'outbound' then s else 0 end)
  on conflict (organization_id, workflow_id, hour, trigger_id, channel, shard) do update set
    messages_in = a.messages_in + excluded.messages_in, messages_out = a.messages_out + excluded.messages_out;
  perform analytics_add_daily(m.organization_id, wf, (m.created_at at time zone 'UTC')::date, tr, m.channel, array[0, 0, 0, 0, 0, 0, 0, 0,
    case when m.direction = 'inbound' then s else 0 end, case when m.direction = 'outbound' then s else 0 end, 0, 0, 0, 0, 0]);
  if with_customer then perform analytics_add_message_customer(m, s); end if;
end $$;

create or replace function analytics_on_execution() returns trigger language plpgsql as $$
declare
  m_in integer;
  v integer[];
begin
  if tg_op = 'INSERT' then
    m_in := case when new.message_id is null then 0 else analytics_inbound_rolled_with(new) end;
    perform analytics_add_execution(new, 1, true, m_in);
    v := analytics_execution_daily(new, 1, true);
    v[9] := m_in;
    perform analytics_add_daily(new.organization_id, new.workflow_id, analytics_execution_day(new), coalesce(new.trigger_id, ''), new.channel, v);
  elsif (old.organization_id, old.workflow_id, date_trunc('hour', old.started_at, 'UTC'), old.trigger_id, old.channel)
        is not distinct from (new.organization_id, new.workflow_id, date_trunc('hour', new.started_at, 'UTC'), new.trigger_id, new.channel) then
    -- A finish: nothing of the key changes (only a backfill or a repair moves an execution).
    perform analytics_change_execution(old, new);
  else
    perform analytics_add_execution(old, -1, false);
    perform analytics_add_execution(new, 1, false);
    if (old.organization_id, old.workflow_id, analytics_execution_day(old), coalesce(old.trigger_id, ''), old.channel)
       is not distinct from (new.organization_id, new.workflow_id, analytics_execution_day(new), coalesce(new.trigger_id, ''), new.channel) then
      perform analytics_add_daily(new.organization_id, new.workflow_id, analytics_execution_day(new), coalesce(new.trigger_id, ''), new.channel,
                                  analytics_execution_daily_change(old, new));
    else
      perform analytics_add_daily(old.organization_id, old.workflow_id, analytics_execution_day(old), coalesce(old.trigger_id, ''), old.channel,
                                  analytics_execution_daily(old, -1, false));
      perform analytics_add_daily(new.organization_id, new.workflow_id, analytics_execution_day(new), coalesce(new.trigger_id, ''), new.channel,
                                  analytics_execution_daily(new, 1, false));
    end if;
  end if;
  return null;
end $$;

create or replace function analytics_on_message() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    if new.rollup_with_execution and analytics_message_rolled_with_execution(new) then
      perform analytics_add_message_customer(new, 1);
    else
      perform analytics_add_message(new, 1, true);
    end if;
  else
    perform analytics_add_message(old, -1, false);
    perform analytics_add_message(new, 1, false);
  end if;
  return null;
end $$;

-- Form steps carry the answers of rating (1-5) and nps (0-10) fields in output.scores.
-- at_shard: the shard to add to; null picks one (the triggers), the rebuild passes 0.
create or replace function analytics_add_scores(st execution_steps, e executions, at_shard smallint default null) returns void language plpgsql as $$
declare
  rating integer[];
  nps integer[];
  h timestamptz := date_trunc('hour', e.started_at, 'UTC');
  tr text := coalesce(e.trigger_id, '');
begin
  select array_agg(v::integer) into rating from jsonb_array_elements_text(coalesce(st.output #> '{scores,rating}', '[]')) v;
  select array_agg(v::integer) into nps from jsonb_array_elements_text(coalesce(st.output #> '{scores,nps}', '[]')) v;
  if rating is null and nps is null then return; end if;
  insert into analytics_hourly as a (organization_id, workflow_id, hour, trigger_id, channel, shard, rating_sum, rating_count, nps_promoters, nps_detractors, nps_count)
  values (e.organization_id, e.workflow_id, h, tr, e.channel, coalesce(at_shard, analytics_hourly_shard(e.organization_id, e.workflow_id, h, tr, e.channel)),
          coalesce((select sum(x) from unnest(rating) x), 0), coalesce(cardinality(rating), 0),
          coalesce((select count(*) from unnest(nps) x where x >= 9), 0), coalesce((select count(*) from unnest(nps) x where x <= 6), 0),
          coalesce(cardinality(nps), 0))
  on conflict (organization_id, workflow_id, hour, trigger_id, channel, shard) do update set
    rating_sum = a.rating_sum + excluded.rating_sum, rating_count = a.rating_count + excluded.rating_count,
    nps_promoters = a.nps_promoters + excluded.nps_promoters, nps_detractors = a.nps_detractors + excluded.nps_detractors,
    nps_count = a.nps_count + excluded.nps_count;
  -- The rebuild (at_shard given) derives the daily tier from the hourly one instead.
  if at_shard is null then
    perform analytics_add_daily(e.organization_id, e.workflow_id, (e.started_at at time zone 'UTC')::date, tr, e.channel, array[0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      coalesce((select sum(x) from unnest(rating) x), 0), coalesce(cardinality(rating), 0),
      coalesce((select count(*) from unnest(nps) x where x >= 9), 0), coalesce((select count(*) from unnest(nps) x where x <= 6), 0),
      coalesce(cardinality(nps), 0)]::integer[]);
  end if;
end $$;

create or replace function analytics_on_step() returns trigger language plpgsql as $$
declare
  e executions;
  h timestamptz;
begin
  select * into e from executions where id = new.execution_id;
  h := date_trunc('hour', e.started_at, 'UTC');
  insert into analytics_node_hourly as a (organization_id, workflow_id, hour, node_id, type, shard, steps, failed_steps, duration_sum_ms)
  values (new.organization_id, e.workflow_id, h, new.node_id, new.type, analytics_node_shard(new.organization_id, e.workflow_id, h, new.node_id, new.type), 1,
          case when new.status = 'failed' then 1 else 0 end, coalesce(new.duration_ms, 0))
  on conflict (organization_id, workflow_id, hour, node_id, type, shard) do update set
    steps = a.steps + 1, failed_steps = a.failed_steps + excluded.failed_steps, duration_sum_ms = a.duration_sum_ms + excluded.duration_sum_ms;
  if new.output ? 'scores' then perform analytics_add_scores(new, e); end if;
  return null;
end $$;

create or replace function analytics_on_step_delete() returns trigger language plpgsql as $$
declare
  e executions;
begin
  select * into e from executions where id = old.execution_id;
  if not found then return null; end if;
  update analytics_node_hourly a
     set steps = a.steps - 1, failed_steps = a.failed_steps - (old.status = 'failed')::int,
         duration_sum_ms = a.duration_sum_ms - coalesce(old.duration_ms, 0)
   where a.ctid = (select ctid from analytics_node_hourly
                    where organization_id = old.organization_id and workflow_id = e.workflow_id
                      and hour = date_trunc('hour', e.started_at, 'UTC') and node_id = old.node_id and type = old.type
                    order by shard limit 1);
  return null;
end $$;

-- Sets analytics_daily's started_by_hour and latency_hist from analytics_hourly (every key and day
-- with hourly rows has a daily row): on the key's first shard, the other shards emptied. The
-- rebuild's last step for the daily tier, and the backfill of those two columns.
create or replace function analytics_daily_hours_fill() returns void language plpgsql as $$
begin
  update analytics_daily set started_by_hour = '{}', latency_hist = '{}' where cardinality(started_by_hour) > 0 or cardinality(latency_hist) > 0;
  update analytics_daily a set started_by_hour = x.hrs, latency_hist = x.hist
    from (select k.organization_id, k.workflow_id, k.day, k.trigger_id, k.channel, k.hrs, coalesce(l.hist, '{}') as hist
            from (select organization_id, workflow_id, (hour at time zone 'UTC')::date as day, trigger_id, channel,
                         analytics_hist_weighted(array_agg(extract(hour from hour at time zone 'UTC')::integer), array_agg(started)) as hrs
                    from analytics_hourly group by 1, 2, 3, 4, 5) k
            left join (select h.organization_id, h.workflow_id, (h.hour at time zone 'UTC')::date as day, h.trigger_id, h.channel,
                              analytics_hist_weighted(array_agg(b), array_agg(h.latency_hist[b])) as hist
                         from analytics_hourly h cross join lateral generate_subscripts(h.latency_hist, 1) b
                        group by 1, 2, 3, 4, 5) l
              on (l.organization_id, l.workflow_id, l.day, l.trigger_id, l.channel) = (k.organization_id, k.workflow_id, k.day, k.trigger_id, k.channel)) x
   where a.organization_id = x.organization_id and a.workflow_id = x.workflow_id and a.day = x.day and a.trigger_id = x.trigger_id
     and a.channel = x.channel
     and a.shard = (select min(shard) from analytics_daily f where f.organization_id = x.organization_id and f.workflow_id = x.workflow_id
                      and f.day = x.day and f.trigger_id = x.trigger_id and f.channel = x.channel);
end $$;

-- Recomputes every rollup from the facts (backfill; bulk loads that bypass the triggers).
create or replace function analytics_rebuild() returns void language plpgsql as $$
begin
  truncate analytics_hourly, analytics_node_hourly, analytics_customer_days, analytics_daily, analytics_customer_returns;
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
  on conflict (organization_id, workflow_id, hour, trigger_id, channel, shard) do update set
    messages_in = excluded.messages_in, messages_out = excluded.messages_out;
  insert into analytics_node_hourly (organization_id, workflow_id, hour, node_id, type, steps, failed_steps, duration_sum_ms)
  select s.organization_id, e.workflow_id, date_trunc('hour', e.started_at, 'UTC'), s.node_id, s.type, count(*),
         count(*) filter (where s.status = 'failed'), coalesce(sum(s.duration_ms), 0)
    from execution_steps s join executions e on e.id = s.execution_id group by 1, 2, 3, 4, 5;
  perform analytics_add_scores(s, e, 0::smallint) from execution_steps s join executions e on e.id = s.execution_id where s.output ? 'scores';
  insert into analytics_customer_days (organization_id, workflow_id, day, channel, customer_id, executions)
  select organization_id, workflow_id, (started_at at time zone 'UTC')::date, channel, customer_id, count(*)
    from executions where customer_id is not null group by 1, 2, 3, 4, 5;
  insert into analytics_customer_days (organization_id, workflow_id, day, channel, customer_id, messages_in, messages_out)
  select organization_id, '', (created_at at time zone 'UTC')::date, channel, customer_id,
         count(*) filter (where direction = 'inbound'), count(*) filter (where direction = 'outbound')
    from messages group by 1, 2, 3, 4, 5;
  insert into analytics_daily (organization_id, workflow_id, day, trigger_id, channel, started, succeeded, failed, cancelled, timeout_errors,
                               api_errors, validation_errors, duration_sum_ms, messages_in, messages_out, rating_sum, rating_count,
                               nps_promoters, nps_detractors, nps_count)
  select organization_id, workflow_id, (hour at time zone 'UTC')::date, trigger_id, channel, sum(started), sum(succeeded), sum(failed),
         sum(cancelled), sum(timeout_errors), sum(api_errors), sum(validation_errors), sum(duration_sum_ms), sum(messages_in),
         sum(messages_out), sum(rating_sum), sum(rating_count), sum(nps_promoters), sum(nps_detractors), sum(nps_count)
    from analytics_hourly group by 1, 2, 3, 4, 5;
  -- An older migration's rebuild (on a database being migrated) runs this body before
  -- Migration20261222000200 adds these columns; that migration fills them itself.
  if exists (select 1 from pg_attribute where attrelid = 'analytics_daily'::regclass and attname = 'started_by_hour' and not attisdropped) then
    perform analytics_daily_hours_fill();
  end if;
  insert into analytics_customer_returns (organization_id, workflow_id, channel, day, since_day, customers)
  select organization_id, workflow_id, channel, day, coalesce(since, '-infinity'), count(*)
    from (select organization_id, workflow_id, channel, day,
                 lag(day) over (partition by organization_id, workflow_id, channel, customer_id order by day) as since
            from analytics_customer_days where workflow_id <> '') x
   group by 1, 2, 3, 4, 5;
  insert into analytics_customer_returns (organization_id, workflow_id, channel, day, since_day, customers)
  select organization_id, workflow_id, '', day, coalesce(since, '-infinity'), count(*)
    from (select organization_id, workflow_id, day, lag(day) over (partition by organization_id, workflow_id, customer_id order by day) as since
            from (select distinct organization_id, workflow_id, customer_id, day from analytics_customer_days where workflow_id <> '') y) x
   group by 1, 2, 3, 4, 5;
end $$;
