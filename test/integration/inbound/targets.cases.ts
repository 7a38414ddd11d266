/**
 * `POST /v1/messages` plans from memory (src/modules/inbound/message-targets.ts): a message
 * reads nothing, and a change to the organization's triggers or
 * workflows, made by the API or by any other writer of the database, is acted on by the
 * very next message (the write statement checks the version its plan was read at).
 */
import { bearer, type TestApp } from '../../helpers/app';
import { inboundTestApp } from '../../helpers/inbound';

describe('inbound message targets kept in memory', () => {
  let t: TestApp;
  let key: string;
  let org: string;
  let workflowId: string;
  let triggerId: string;

  beforeAll(async () => {
    ({ t, key, org, workflowId, triggerId } = await inboundTestApp());
  });
  afterAll(() => t.close());

  const send = async (customer: string, message: string) => {
    const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message });
    expect(res.status).toBe(201);
    return res.body.data as { status: string; customer_id: string; executions: Array<{ workflow_id: string; trigger_id: string | null }> };
  };
  const reads = () => t.services.messageTargets.reads;
  /**
   * Ends the customer's running executions through the API (no worker runs them here): a
   * workflow runs once at a time per customer, so the customer's next message may start it again.
   */
  const endConversation = async (customer: string) => {
    const running = await t.query<{ id: string; workflow_id: string }>(
      `select e.id, e.workflow_id from executions e join customers c on c.id = e.customer_id
        where c.organization_id = ? and c.external_id = ? and e.status = 'running'`,
      [org, customer],
    );
    for (const e of running) {
      expect((await t.request.post(`/v1/workflows/${e.workflow_id}/executions/${e.id}/cancel`).set(bearer(key))).status).toBe(200);
    }
  };

  it('a known customer and a new one read nothing; the executions’ counters are no change', async () => {
    const first = await send('known', 'hello');
    expect(first.executions).toEqual([expect.objectContaining({ workflow_id: workflowId, trigger_id: triggerId })]);
    await endConversation('known');
    const before = reads();

    const again = await send('known', 'hello again');
    expect(again).toMatchObject({ status: 'started', customer_id: first.customer_id });
    expect(again.executions).toEqual([expect.objectContaining({ workflow_id: workflowId, trigger_id: triggerId })]);
    const stranger = await send('stranger', 'hello');
    expect(stranger.status).toBe('started');
    expect(stranger.customer_id).not.toBe(first.customer_id);
    expect(reads()).toBe(before);

    // Every message moved the workflow's and the trigger's counters: still no read.
    const [counts] = await t.query<{ workflow: number; trigger: number }>(
      'select (select execution_count from workflows where id = ?) as workflow, (select execution_count from triggers where id = ?) as trigger',
      [workflowId, triggerId],
    );
    expect(counts).toEqual({ workflow: 3, trigger: 3 });
    await endConversation('known');
    await send('known', 'hello once more');
    expect(reads()).toBe(before);
  });

  it('a customer this process has not seen is found by the write: read once, counted, not created twice', async () => {
    // Created by another process, or before this one started.
    await t.query(`insert into customers (id, organization_id, channel, external_id, name, message_count) values ('cus_elsewhere', ?, 'whatsapp', 'elsewhere', 'Ana', 4)`, [org]);
    const before = reads();
    const answer = await send('elsewhere', 'hello');
    expect(answer).toMatchObject({ status: 'started', customer_id: 'cus_elsewhere' });
    expect(reads()).toBe(before + 1);
    await endConversation('elsewhere');
    await send('elsewhere', 'hello');
    expect(reads()).toBe(before + 1);

    const [row] = await t.query<{ message_count: number; customers: number; created: number; executions: number }>(
      `select (select message_count from customers where id = 'cus_elsewhere') as message_count,
              (select count(*)::int from customers where organization_id = ? and external_id = 'elsewhere') as customers,
              (select count(*)::int from events where type = 'customer.created' and data->>'customer_id' = 'cus_elsewhere') as created,
              (select count(*)::int from executions where customer_id = 'cus_elsewhere') as executions`,
      [org],
    );
    expect(row).toEqual({ message_count: 6, customers: 1, created: 0, executions: 2 });
  });

  it('a trigger changed through the API is acted on by the next message', async () => {
    await endConversation('known');
    await send('known', 'hello'); // the candidates are in memory now
    await endConversation('known');
    const put = await t.request
      .put(`/v1/triggers/${triggerId}`)
      .set(bearer(key))
      .send({ configuration: { keywords: ['bonjour'] } });
    expect(put.status).toBe(200);
    const before = reads();

    expect(await send('known', 'hello')).toMatchObject({ status: 'no_match', executions: [] });
    expect(reads()).toBe(before + 1);
    expect((await send('known', 'bonjour')).executions).toEqual([expect.objectContaining({ trigger_id: triggerId })]);
    expect(reads()).toBe(before + 1);
  });

  it('a change by another writer of the database is acted on too, with no signal to this process', async () => {
    await endConversation('known');
    expect((await send('known', 'bonjour')).status).toBe('started');
    await endConversation('known');
    await t.query(`update workflows set status = 'inactive' where id = ?`, [workflowId]);
    expect(await send('known', 'bonjour')).toMatchObject({ status: 'no_match', executions: [] });

    await t.query(`update workflows set status = 'active' where id = ?`, [workflowId]);
    expect((await send('known', 'bonjour')).executions).toEqual([expect.objectContaining({ workflow_id: workflowId })]);
    await endConversation('known');

    // A workflow of the channel created meanwhile starts on its own keywords at once.
    const other = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Other', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['bonjour'] }, nodes: [{ id: 'n1', type: 'message', content: 'Salut' }] } });
    expect((await t.request.post(`/v1/workflows/${other.body.data.id}/activate`).set(bearer(key))).status).toBe(200);
    const both = await send('known', 'bonjour');
    expect(both.executions.map((e) => e.workflow_id).sort()).toEqual([workflowId, other.body.data.id].sort());
  });

  it('a handoff begun by another writer silences the very next message; the plan said none, so the check is made again', async () => {
    const first = await send('handed', 'bonjour');
    expect(first.status).toBe('started');
    await endConversation('handed');
    // Another process hands the customer to a person: nothing tells this one, whose plan
    // says the channel has no handoff (so it does not look for one).
    await t.query(`insert into customer_handoffs (id, organization_id, customer_id, channel, until) values (?, ?, ?, 'whatsapp', now() + interval '1 hour')`, [
      `hof_${first.customer_id}`,
      org,
      first.customer_id,
    ]);
    const before = reads();
    expect(await send('handed', 'bonjour')).toMatchObject({ status: 'ignored', reason: 'handed_off', customer_id: first.customer_id, executions: [] });
    expect(reads()).toBe(before + 1);

    // Ended elsewhere too: the next message starts the workflow again.
    await t.query(`update customer_handoffs set ended_at = now(), end_reason = 'deleted' where customer_id = ?`, [first.customer_id]);
    expect(await send('handed', 'bonjour')).toMatchObject({ status: 'started', executions: expect.arrayContaining([expect.objectContaining({ workflow_id: workflowId })]) });
  });
});
