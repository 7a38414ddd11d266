/**
 * The customer side of `POST /v1/messages`, written by the message's single statement
 * (src/modules/inbound/message.writes.ts): concurrent first messages of a new customer make
 * one customer and count every message; a name is taken when given and announced once;
 * every message, execution, firing and event of a message commits together.
 */
import { bearer, type TestApp } from '../../helpers/app';
import { inboundTestApp } from '../../helpers/inbound';
import { waitFor } from '../../helpers/wait';

describe('inbound messages and their customer', () => {
  let t: TestApp;
  let key: string;
  let org: string;
  let workflowId: string;
  let triggerId: string;

  beforeAll(async () => {
    ({ t, key, org, workflowId, triggerId } = await inboundTestApp());
  });
  afterAll(() => t.close());

  const send = (body: object) => t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', ...body });
  const eventsOf = (type: string, customerId: string) =>
    t.query<{ data: Record<string, unknown> }>(`select data from events where organization_id = ? and type = ? and data->>'customer_id' = ? order by created_at, id`, [
      org,
      type,
      customerId,
    ]);

  it('concurrent first messages of a new customer: one customer, every message counted, one execution started and the others skipped', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => send({ customer_id: 'new-1', message: 'hello there' })));
    // The workflow runs once at a time per customer (the default concurrency rule): one start, five skips.
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 6 }, () => 201));
    expect(answers.map((a) => a.body.data?.status).sort()).toEqual(['skipped', 'skipped', 'skipped', 'skipped', 'skipped', 'started']);
    const customerIds = new Set(answers.map((a) => a.body.data.customer_id as string));
    expect(customerIds.size).toBe(1);
    const [customerId] = [...customerIds];
    const [row] = await t.query<{ message_count: number; n: number }>(
      `select max(message_count)::int as message_count, count(*)::int as n from customers where organization_id = ? and external_id = 'new-1'`,
      [org],
    );
    expect(row).toEqual({ message_count: 6, n: 1 });
    expect(await eventsOf('customer.created', customerId!)).toHaveLength(1);
    // The starting message: its execution, attributed to the trigger, with its firing and events, all linked.
    const linked = await t.query<{ n: number }>(
      `select count(*)::int as n from messages m
         join executions e on e.id = m.execution_id and e.message_id = m.id and e.trigger_id = ? and e.customer_id = m.customer_id
         join trigger_executions f on f.execution_id = e.id and f.status = 'running'
        where m.customer_id = ? and m.delivered_at is not null`,
      [triggerId, customerId],
    );
    expect(linked[0]!.n).toBe(1);
    // The others: a skipped firing each, no execution, the message not linked.
    const skipped = await t.query<{ n: number }>(
      `select count(*)::int as n from trigger_executions f
        where f.customer_id = ? and f.trigger_id = ? and f.status = 'skipped' and f.execution_id is null and f.error_code = 'already_running'`,
      [customerId, triggerId],
    );
    expect(skipped[0]!.n).toBe(5);
    expect(await t.query('select 1 from messages where customer_id = ? and execution_id is null and delivered_at is null', [customerId])).toHaveLength(5);
    expect(await eventsOf('workflow.started', customerId!)).toHaveLength(1);
    expect(await eventsOf('trigger.activated', customerId!)).toHaveLength(6);
    const received = await eventsOf('message.received', customerId!);
    expect(received).toHaveLength(6);
    // Started on Temporal after the answer, and stamped (in one batch) so the reconciler leaves them alone.
    await waitFor(
      async () =>
        (await t.query<{ n: number }>('select count(*)::int as n from executions where customer_id = ? and temporal_started_at is not null', [customerId]))[0]!.n === 1,
      'the start to be stamped',
    );
    expect(received[0]!.data).toEqual({
      message_id: expect.any(String),
      customer_id: customerId,
      external_id: 'new-1',
      channel: 'whatsapp',
      text: 'hello there',
      metadata: {},
      execution_id: null,
    });
  });

  it('a name is taken when given and announced once; a message without one keeps it', async () => {
    const first = await send({ customer_id: 'named-1', message: 'nothing to match' });
    expect(first.body.data.status).toBe('no_match');
    const customerId = first.body.data.customer_id as string;
    expect(await eventsOf('customer.created', customerId)).toEqual([{ data: { customer_id: customerId, external_id: 'named-1', channel: 'whatsapp', name: null } }]);

    await send({ customer_id: 'named-1', message: 'still nothing', customer: { name: 'Ada' } });
    await send({ customer_id: 'named-1', message: 'and again', customer: { name: 'Ada' } });
    await send({ customer_id: 'named-1', message: 'no name this time' });
    expect(await eventsOf('customer.updated', customerId)).toEqual([
      { data: { customer_id: customerId, external_id: 'named-1', channel: 'whatsapp', name: 'Ada', changed: ['name'] } },
    ]);
    const got = await t.request.get(`/v1/customers/${customerId}`).set(bearer(key));
    expect(got.body.data).toMatchObject({ name: 'Ada', message_count: 4 });
    // A message that matched nothing is not linked, not delivered, and starts nothing.
    const unlinked = await t.query<{ n: number }>(`select count(*)::int as n from messages where customer_id = ? and execution_id is null and delivered_at is null`, [customerId]);
    expect(unlinked[0]!.n).toBe(4);
    expect(await eventsOf('workflow.started', customerId)).toEqual([]);
  });
});
