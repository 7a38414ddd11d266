/**
 * `POST /v1/messages` plans from memory (src/modules/inbound/message-targets.ts): a known
 * customer's message reads nothing, and a change to the organization's triggers or
 * workflows, made by the API or by any other writer of the database, is acted on by the
 * very next message (the write statement checks the version its plan was read at).
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';

describe('inbound message targets kept in memory', () => {
  let t: TestApp;
  let key: string;
  let workflowId: string;
  let triggerId: string;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_HOUR: '100000', RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '100000' });
    key = (await t.createKey('admin')).key;
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Greeter', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Hi' }] } });
    workflowId = wf.body.data.id;
    expect((await t.request.post(`/v1/workflows/${workflowId}/activate`).set(bearer(key))).status).toBe(200);
    const trigger = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'hello', type: 'message', workflow_id: workflowId, channel: 'whatsapp', configuration: { keywords: ['hello'] } });
    expect(trigger.status).toBe(201);
    triggerId = trigger.body.data.id;
  });
  afterAll(() => t.close());

  const send = async (customer: string, message: string) => {
    const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message });
    expect(res.status).toBe(201);
    return res.body.data as { status: string; customer_id: string; executions: Array<{ workflow_id: string; trigger_id: string | null }> };
  };
  const reads = () => ({ ...t.services.messageTargets.reads });

  it('a known customer reads nothing; a new one reads only its id; the executions’ counters are no change', async () => {
    const first = await send('known', 'hello');
    expect(first.executions).toEqual([expect.objectContaining({ workflow_id: workflowId, trigger_id: triggerId })]);
    const before = reads();

    const again = await send('known', 'hello again');
    expect(again).toMatchObject({ status: 'started', customer_id: first.customer_id });
    expect(again.executions).toEqual([expect.objectContaining({ workflow_id: workflowId, trigger_id: triggerId })]);
    expect(reads()).toEqual(before);

    const stranger = await send('stranger', 'hello');
    expect(stranger.status).toBe('started');
    expect(stranger.customer_id).not.toBe(first.customer_id);
    expect(reads()).toEqual({ candidates: before.candidates, customers: before.customers + 1 });

    // Every message moved the workflow's and the trigger's counters: still no read of the candidates.
    const [counts] = await t.query<{ workflow: number; trigger: number }>(
      'select (select execution_count from workflows where id = ?) as workflow, (select execution_count from triggers where id = ?) as trigger',
      [workflowId, triggerId],
    );
    expect(counts).toEqual({ workflow: 3, trigger: 3 });
    await send('known', 'hello once more');
    expect(reads().candidates).toBe(before.candidates);
  });

  it('a trigger changed through the API is acted on by the next message', async () => {
    await send('known', 'hello'); // the candidates are in memory now
    const put = await t.request
      .put(`/v1/triggers/${triggerId}`)
      .set(bearer(key))
      .send({ configuration: { keywords: ['bonjour'] } });
    expect(put.status).toBe(200);
    const before = reads();

    expect(await send('known', 'hello')).toMatchObject({ status: 'no_match', executions: [] });
    expect(reads().candidates).toBe(before.candidates + 1);
    expect((await send('known', 'bonjour')).executions).toEqual([expect.objectContaining({ trigger_id: triggerId })]);
    expect(reads().candidates).toBe(before.candidates + 1);
  });

  it('a change by another writer of the database is acted on too, with no signal to this process', async () => {
    expect((await send('known', 'bonjour')).status).toBe('started');
    await t.query(`update workflows set status = 'inactive' where id = ?`, [workflowId]);
    expect(await send('known', 'bonjour')).toMatchObject({ status: 'no_match', executions: [] });

    await t.query(`update workflows set status = 'active' where id = ?`, [workflowId]);
    expect((await send('known', 'bonjour')).executions).toEqual([expect.objectContaining({ workflow_id: workflowId })]);

    // A workflow of the channel created meanwhile starts on its own keywords at once.
    const other = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Other', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['bonjour'] }, nodes: [{ id: 'n1', type: 'message', content: 'Salut' }] } });
    expect((await t.request.post(`/v1/workflows/${other.body.data.id}/activate`).set(bearer(key))).status).toBe(200);
    const both = await send('known', 'bonjour');
    expect(both.executions.map((e) => e.workflow_id).sort()).toEqual([workflowId, other.body.data.id].sort());
  });
});
