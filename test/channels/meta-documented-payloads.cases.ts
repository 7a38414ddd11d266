/**
 * Webhook bodies Meta documents beyond its OpenAPI (test/fixtures/meta-payloads/, each page
 * named in its README) that today's code handles: statuses carrying `conversation`,
 * `pricing` and `errors`; a read status for a user known only by business-scoped user ID;
 * Instagram echoes, quick replies and read receipts; Messenger's `object: "page"` sent to an
 * Instagram connection. The ones that need the gap fixes of issue #46 are in
 * meta-spec-gaps.cases.ts.
 */
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type FakeMeta, startFakeMeta, whatsAppText, postSignedHook } from '../helpers/fake-meta';
import { metaDocumentedPayload } from '../helpers/meta-spec-examples';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow } from '../executions/helpers';

// The ids the fixtures carry (Meta's own example phone number id; an Instagram account id).
const PHONE_ID = '106540352242922';
const IG_ID = '17841400000000001';
const IGSID = '6745610000000123';
const SECRET = 'documented-app-secret';

describe("Meta's documented webhook bodies beyond the spec", () => {
  let t: TestApp;
  let meta: FakeMeta;
  let worker: TestWorker;
  let admin: string;
  let wa: string;
  let ig: string;

  const hook = async (id: string, body: unknown) => {
    const res = await postSignedHook(t.request, id, body, SECRET);
    expect(res.status).toBe(200);
    return res.body.data as { messages: number; duplicates: number; statuses: number; ignored: number; failed: number };
  };
  const customerOf = async (externalId: string) => (await t.query<{ id: string }>('select id from customers where external_id = ?', [externalId]))[0]?.id;
  const transcript = async (externalId: string) =>
    (await t.request.get(`/v1/customers/${await customerOf(externalId)}/messages?limit=100`).set(bearer(admin))).body.data as Array<Record<string, any>>;
  /** A customer writes "status"; the workflow's answer is sent; its wamid as Meta answered it. */
  const answeredWamid = async (waId: string) => {
    await hook(wa, whatsAppText(PHONE_ID, waId, 'status').body);
    const sent = await waitFor(async () => meta.sends.find((s) => s.status === 200 && s.body?.to === waId), 'the answer to be sent');
    await waitFor(async () => ((await transcript(waId)).some((m) => m.direction === 'outbound' && m.delivery_status === 'sent') ? true : undefined), 'the answer recorded as sent');
    return sent.id;
  };
  /** A documented status body for our message `wamid` (its only rewrite). */
  const statusFor = (file: string, wamid: string) => {
    const body = metaDocumentedPayload(file);
    body.entry[0].changes[0].value.statuses[0].id = wamid;
    return body;
  };

  beforeAll(async () => {
    meta = await startFakeMeta();
    t = await createTestApp({ META_GRAPH_API_URL: meta.url });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    admin = (await t.createKey('admin')).key;
    wa = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'tok', app_secret: SECRET } })).body.data.id;
    ig = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'instagram', name: 'IG', config: { instagram_account_id: IG_ID, access_token: 'IG-token', app_secret: SECRET } })).body.data.id;
    await createActiveWorkflow(t, admin, { name: 'Status', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['status'] }, nodes: [{ id: 'm', type: 'message', content: 'Your order shipped' }] } });
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await meta.close();
  });

  it('a sent status with conversation and pricing, then failed with errors[]: the message ends failed with Meta’s error', async () => {
    // Status messages webhook reference: https://developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/status/
    const waId = '16505551234';
    const wamid = await answeredWamid(waId);
    expect(await hook(wa, statusFor('whatsapp-status-sent-pricing.json', wamid))).toMatchObject({ failed: 0, messages: 0 });
    expect(await hook(wa, statusFor('whatsapp-status-failed-errors.json', wamid))).toMatchObject({ statuses: 1, failed: 0 });
    const [out] = (await transcript(waId)).filter((m) => m.direction === 'outbound');
    expect(out).toMatchObject({ delivery_status: 'failed', error: { code: 131049, title: expect.stringContaining('not delivered') } });
  });

  it('a read status carrying recipient_user_id (BSUID) instead of recipient_id still moves our message to read', async () => {
    // Business-scoped user IDs: https://developers.facebook.com/documentation/business-messaging/whatsapp/business-scoped-user-ids/
    const waId = '16505559876';
    const wamid = await answeredWamid(waId);
    expect(await hook(wa, statusFor('whatsapp-bsuid-status-read.json', wamid))).toMatchObject({ statuses: 1, failed: 0 });
    expect((await transcript(waId)).find((m) => m.direction === 'outbound')).toMatchObject({ delivery_status: 'read' });
  });

  it('Instagram: an echo of our own send is no customer message; a quick reply keeps its payload; a read receipt records nothing', async () => {
    // https://developers.facebook.com/docs/instagram-platform/webhooks/examples/ and https://developers.facebook.com/docs/instagram-messaging/webhooks
    expect(await hook(ig, metaDocumentedPayload('instagram-echo.json'))).toMatchObject({ messages: 0, ignored: 1 });
    expect(await customerOf(IGSID)).toBeUndefined();

    expect(await hook(ig, metaDocumentedPayload('instagram-quick-reply.json'))).toMatchObject({ messages: 1 });
    const rows = await t.query<{ direction: string; text: string; metadata: Record<string, unknown> }>(
      'select m.direction, m.text, m.metadata from messages m join customers c on c.id = m.customer_id where c.external_id = ?',
      [IGSID],
    );
    expect(rows.map((m) => [m.direction, m.text, m.metadata.quick_reply])).toEqual([['inbound', 'Yes', { payload: 'CONFIRM_YES' }]]);

    expect(await hook(ig, metaDocumentedPayload('instagram-read.json'))).toMatchObject({ messages: 0, failed: 0 });
    expect(await transcript(IGSID)).toHaveLength(1);
  });

  it('Messenger’s object "page" posted to an Instagram connection is acknowledged and not taken for an Instagram message', async () => {
    // Messenger Platform webhook events: https://developers.facebook.com/documentation/business-messaging/messenger-platform/webhooks/webhook-events
    expect(await hook(ig, metaDocumentedPayload('messenger-page-message.json'))).toMatchObject({ messages: 0, ignored: 1 });
    expect(await customerOf('7090000000000123')).toBeUndefined();
  });
});
