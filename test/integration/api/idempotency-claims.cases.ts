/**
 * An `Idempotency-Key` claim taken over (its lease lapsed while its request still ran, and a
 * retry claimed the key): the first request's work cannot commit any more. Its transaction
 * (a trigger fire) or its one statement (an inbound message) finds the claim no longer its
 * own and rolls back with 409 IDEMPOTENCY_KEY_IN_USE, so only one work per key commits.
 */
import { keyInUse } from '../../../src/http/idempotency';
import { receiveMessage } from '../../../src/modules/inbound/message.service';
import { fireTrigger } from '../../../src/modules/triggers/trigger-firing';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

describe('an Idempotency-Key claim taken over mid-request', () => {
  let t: TestApp;
  let key: string;
  let organizationId: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ key, organizationId } = await t.createKey('admin'));
  });
  afterAll(() => t.close());

  /** A claim this process holds, then taken over by another request (its token replaced). */
  async function takenOverClaim(idempotencyKey: string) {
    const claim = await t.services.idempotency.claim(organizationId, idempotencyKey, 'hash');
    if (claim.kind !== 'claimed') throw new Error(`expected a fresh claim, got ${claim.kind}`);
    await t.query("update idempotency_keys set claim_token = 'the-retry' where key = ?", [idempotencyKey]);
    return claim.held;
  }

  it('a trigger fire whose claim was taken over commits nothing: 409 IDEMPOTENCY_KEY_IN_USE', async () => {
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({ name: 'Claimed', channel: 'whatsapp', configuration: { nodes: [{ id: 'a', type: 'message', content: 'hi' }] } });
    await t.request.post(`/v1/workflows/${wf.body.data.id}/activate`).set(bearer(key)).expect(200);
    const trigger = await t.request.post('/v1/triggers').set(bearer(key)).send({ name: 'Claimed api', type: 'api', workflow_id: wf.body.data.id, configuration: {} });
    const held = await takenOverClaim('taken-over-fire');
    const fired = fireTrigger(t.services, { organizationId, triggerId: trigger.body.data.id, workflowId: wf.body.data.id, channel: 'whatsapp', input: {}, claim: held });
    await expect(fired).rejects.toEqual(keyInUse());
    expect(await t.query('select 1 from trigger_executions where trigger_id = ?', [trigger.body.data.id])).toHaveLength(0);
    expect(await t.query('select 1 from executions where workflow_id = ?', [wf.body.data.id])).toHaveLength(0);
    expect(await t.query('select recovery_point from idempotency_keys where key = ?', ['taken-over-fire'])).toEqual([{ recovery_point: null }]);
  });

  it('an inbound message whose claim was taken over writes nothing (its statement fails with WAI02)', async () => {
    const held = await takenOverClaim('taken-over-message');
    const received = receiveMessage(t.services, organizationId, { channel: 'whatsapp', customer_id: 'taken-over', message: 'hello' }, undefined, { claim: held });
    await expect(received).rejects.toMatchObject({ code: 'WAI02' });
    expect(await t.query("select 1 from customers where external_id = 'taken-over'")).toHaveLength(0);
    expect(await t.query("select 1 from messages where text = 'hello'")).toHaveLength(0);
  });
});
