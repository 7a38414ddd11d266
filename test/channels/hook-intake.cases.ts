/**
 * A flood through the Meta hook shares the inbound intake with POST /v1/messages: while
 * another organization is active, one organization's hook messages wait in its own queue of
 * the intake (INBOUND_MESSAGES_PER_ORGANIZATION), and the other's POST /v1/messages is
 * answered meanwhile. The organization's share is held by calls of the test's own, so the
 * assertions read admission and order, not time.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { hubSignature, whatsAppText } from '../helpers/fake-meta';
import { waitFor } from '../helpers/wait';

describe('channel hook intake', () => {
  let t: TestApp;
  const SECRET = 'flood-app-secret';
  const PHONE_ID = '106540352249999';

  beforeAll(async () => {
    t = await createTestApp({ INBOUND_MESSAGES_PER_ORGANIZATION: '2' });
  });
  afterAll(() => t.close());

  it("queues a WhatsApp flood's messages in its organization's share of the intake while another organization's POST /v1/messages is answered", async () => {
    const a = await t.createKey('admin', await t.createOrg());
    const b = await t.createKey('admin', await t.createOrg());
    const wa = (
      await t.request
        .post('/v1/channels')
        .set(bearer(a.key))
        .send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'tok', app_secret: SECRET } })
    ).body.data as { id: string };

    // Organization A already has its two messages in flight, and B is active: A is at its share.
    let releaseA!: () => void;
    const aBusy = new Promise<void>((r) => (releaseA = r));
    let releaseB!: () => void;
    const bBusy = new Promise<void>((r) => (releaseB = r));
    const heldA = [t.services.intake.run(a.organizationId, () => aBusy), t.services.intake.run(a.organizationId, () => aBusy)];
    const heldB = t.services.intake.run(b.organizationId, () => bBusy);

    const { body, wamid } = whatsAppText(PHONE_ID, '15550009001', 'hello');
    const raw = JSON.stringify(body);
    const hook = t.request.post(`/hooks/channels/${wa.id}`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', hubSignature(SECRET, raw)).send(raw).then((r) => r);
    // The hook's message waits in A's queue of the intake, recorded nowhere yet.
    await waitFor(async () => t.services.intake.waitingCount(a.organizationId) === 1, "the hook's message queued in A's share");
    expect(await t.query('select id from messages where provider_message_id = ?', [wamid])).toHaveLength(0);

    // B's own message is admitted and answered while A's hook message still waits.
    const fromB = await t.request.post('/v1/messages').set(bearer(b.key)).send({ channel: 'whatsapp', customer_id: '15550009002', message: 'hi' });
    expect(fromB.status).toBe(201);
    expect(t.services.intake.waitingCount(a.organizationId)).toBe(1);
    expect(await t.query('select id from messages where provider_message_id = ?', [wamid])).toHaveLength(0);

    // A's share frees: the hook's message is recorded and acknowledged.
    releaseA();
    releaseB();
    await Promise.all([...heldA, heldB]);
    const res = await hook;
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ messages: 1, failed: 0 });
    expect(await t.query('select id from messages where provider_message_id = ?', [wamid])).toHaveLength(1);
  });
});
