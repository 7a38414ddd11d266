/**
 * An inbound message and the execution it starts, written together, are counted in the
 * hourly and daily rollups by the execution's upserts (analytics_inbound_rolled_with in
 * src/db/sql/analytics-rollups.sql); every other message is counted on its own. Either way
 * the sums are what the facts say: `analytics_rebuild()` reproduces them.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('an inbound message counted with the execution it starts', () => {
  let t: TestApp;
  let key: string;
  let org: string;
  let wf: string;

  beforeAll(async () => {
    t = await createTestApp();
    const created = await t.createKey('admin');
    key = created.key;
    org = created.organizationId;
    const res = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Greeter', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'n1', type: 'message', content: 'Hi' }] } });
    expect(res.status).toBe(201);
    wf = res.body.data.id;
    expect((await t.request.post(`/v1/workflows/${wf}/activate`).set(bearer(key))).status).toBe(200);
  });
  afterAll(async () => t.close());

  const send = async (customer: string, message: string) => {
    const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message });
    expect(res.status).toBeLessThan(300);
  };

  /** The rollups' sums per key (shards folded), of the organization. */
  const sums = async () => ({
    hourly: await t.query(
      `select workflow_id, hour, trigger_id, channel, sum(started)::int as started, sum(messages_in)::int as messages_in, sum(messages_out)::int as messages_out
         from analytics_hourly where organization_id = ? group by 1, 2, 3, 4 having sum(started) <> 0 or sum(messages_in) <> 0 or sum(messages_out) <> 0 order by 1, 2, 3, 4`,
      [org],
    ),
    daily: await t.query(
      `select workflow_id, day, trigger_id, channel, sum(started)::int as started, sum(messages_in)::int as messages_in
         from analytics_daily where organization_id = ? group by 1, 2, 3, 4 having sum(started) <> 0 or sum(messages_in) <> 0 order by 1, 2, 3, 4`,
      [org],
    ),
    customerDays: await t.query(
      `select workflow_id, day, channel, customer_id, executions, messages_in from analytics_customer_days
        where organization_id = ? and (executions <> 0 or messages_in <> 0) order by 1, 2, 3, 4`,
      [org],
    ),
  });

  it('marks the message that started an execution, counts it once in its hour and day, and the rebuild agrees', async () => {
    await send('c-first', 'hello there'); // starts an execution
    await send('c-second', 'hello again'); // starts another
    await send('c-other', 'nothing to match'); // starts nothing
    const marked = await t.query<{ text: string; rollup_with_execution: boolean; linked: boolean }>(
      `select text, rollup_with_execution, execution_id is not null as linked from messages where organization_id = ? order by created_at`,
      [org],
    );
    expect(marked).toEqual([
      { text: 'hello there', rollup_with_execution: true, linked: true },
      { text: 'hello again', rollup_with_execution: true, linked: true },
      { text: 'nothing to match', rollup_with_execution: false, linked: false },
    ]);
    const counted = await sums();
    // Two executions and their two messages under the workflow's key; the unmatched message under none ('').
    const byWorkflow = (rows: Array<Record<string, unknown>>, w: string) => rows.filter((r) => r.workflow_id === w);
    const total = (rows: Array<Record<string, unknown>>, col: string) => rows.reduce((n, r) => n + (r[col] as number), 0);
    expect(total(byWorkflow(counted.hourly, wf), 'started')).toBe(2);
    expect(total(byWorkflow(counted.hourly, wf), 'messages_in')).toBe(2);
    expect(total(byWorkflow(counted.hourly, ''), 'messages_in')).toBe(1);
    expect(total(byWorkflow(counted.daily, wf), 'messages_in')).toBe(2);
    expect(total(counted.customerDays.filter((r) => r.workflow_id === ''), 'messages_in')).toBe(3);
    await t.query('select analytics_rebuild()');
    expect(await sums()).toEqual(counted);
  });

  it('counts on its own a marked message of another hour than its execution, and one linked later (a burst\'s)', async () => {
    const [cust] = await t.query<{ id: string }>(`select id from customers where organization_id = ? and external_id = 'c-first'`, [org]);
    // Marked, but the execution started in the next hour: each is counted in its own hour.
    await t.query(`begin`);
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, message_id, temporal_started_at)
       values ('exec_next_hour', ?, ?, 1, ?, 'whatsapp', 'running', '2026-10-05T11:00:00Z', 'msg_prev_hour', now())`,
      [org, wf, cust!.id],
    );
    await t.query(
      `insert into messages (id, organization_id, customer_id, channel, direction, text, execution_id, created_at, rollup_with_execution)
       values ('msg_prev_hour', ?, ?, 'whatsapp', 'inbound', 'hello', 'exec_next_hour', '2026-10-05T10:59:59Z', true)`,
      [org, cust!.id],
    );
    await t.query(`commit`);
    // A burst's message: recorded unlinked, then its execution and the link in one transaction.
    await t.query(
      `insert into messages (id, organization_id, customer_id, channel, direction, text, created_at)
       values ('msg_burst', ?, ?, 'whatsapp', 'inbound', 'hello', '2026-10-06T09:10:00Z')`,
      [org, cust!.id],
    );
    await t.query(`begin`);
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, message_id, temporal_started_at)
       values ('exec_burst', ?, ?, 1, ?, 'whatsapp', 'running', '2026-10-06T09:10:01Z', 'msg_burst', now())`,
      [org, wf, cust!.id],
    );
    await t.query(`update messages set execution_id = 'exec_burst' where id = 'msg_burst'`);
    await t.query(`commit`);
    const hourOf = async (hour: string) =>
      t.query(`select sum(started)::int as started, sum(messages_in)::int as messages_in from analytics_hourly where organization_id = ? and workflow_id = ? and hour = ?`, [
        org,
        wf,
        hour,
      ]);
    expect(await hourOf('2026-10-05T10:00:00Z')).toEqual([{ started: 0, messages_in: 1 }]);
    expect(await hourOf('2026-10-05T11:00:00Z')).toEqual([{ started: 1, messages_in: 0 }]);
    expect(await hourOf('2026-10-06T09:00:00Z')).toEqual([{ started: 1, messages_in: 1 }]);
    const counted = await sums();
    await t.query('select analytics_rebuild()');
    expect(await sums()).toEqual(counted);
  });
});
