/**
 * `/hooks/channels/{id}`: Meta's handshake, X-Hub-Signature-256 (a real HMAC), and the
 * documented WhatsApp and Instagram payloads going through the path of POST /v1/messages:
 * customers by wa_id / IGSID with their profile name, wamid / mid as provider message ids,
 * redeliveries, interactive replies, non-text messages, echoes. No worker runs here: the
 * executions a message starts stay `running`, which is all these tests read.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { hubSignature, instagramMessage, whatsAppMessage, whatsAppText } from '../helpers/fake-meta';

describe('channel hooks', () => {
  let t: TestApp;
  let admin: string;
  let wa: { id: string; verify_token: string };
  let ig: { id: string };
  const WA_SECRET = 'wa-app-secret';
  const IG_SECRET = 'ig-app-secret';
  const PHONE_ID = '106540352242922';
  const IG_ID = '17841400000000001';

  const post = (id: string, body: unknown, secret: string | null, raw = JSON.stringify(body)) => {
    const req = t.request.post(`/hooks/channels/${id}`).set('Content-Type', 'application/json');
    return (secret === null ? req : req.set('X-Hub-Signature-256', hubSignature(secret, raw))).send(raw);
  };
  const counts = async () => (await t.query<{ n: string }>("select (select count(*) from messages) + (select count(*) from customers) + (select count(*) from executions) as n"))[0]!.n;

  beforeAll(async () => {
    t = await createTestApp();
    admin = (await t.createKey('admin')).key;
    wa = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'tok', app_secret: WA_SECRET } })).body.data;
    ig = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'instagram', name: 'IG', config: { instagram_account_id: IG_ID, access_token: 'tok', app_secret: IG_SECRET } })).body.data;
    const wf = await t.request
      .post('/v1/workflows')
      .set(bearer(admin))
      .send({ name: 'Greeter', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'n1', type: 'message', content: 'Hi' }] } });
    await t.request.post(`/v1/workflows/${wf.body.data.id}/activate`).set(bearer(admin)).expect(200);
  });
  afterAll(() => t.close());

  it("answers Meta's handshake with the challenge as text/plain, and 403 to a wrong token", async () => {
    const ok = await t.request.get(`/hooks/channels/${wa.id}`).query({ 'hub.mode': 'subscribe', 'hub.verify_token': wa.verify_token, 'hub.challenge': '1158201444' });
    expect(ok.status).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/plain/);
    expect(ok.text).toBe('1158201444');
    const wrong = await t.request.get(`/hooks/channels/${wa.id}`).query({ 'hub.mode': 'subscribe', 'hub.verify_token': 'nope', 'hub.challenge': '1' });
    expect(wrong.status).toBe(403);
    expect((await t.request.get(`/hooks/channels/${wa.id}`).query({ 'hub.verify_token': wa.verify_token, 'hub.challenge': '1' })).status).toBe(403);
    expect((await t.request.get('/hooks/channels/chn_unknown').query({ 'hub.mode': 'subscribe', 'hub.verify_token': 'x', 'hub.challenge': '1' })).status).toBe(404);
  });

  it('refuses a missing or wrong signature with 401 and records nothing; a malformed body is 400', async () => {
    const before = await counts();
    const { body } = whatsAppText(PHONE_ID, '15550001111', 'hello');
    expect((await post(wa.id, body, null)).status).toBe(401);
    expect((await post(wa.id, body, 'another-secret')).status).toBe(401);
    expect((await post(wa.id, body, IG_SECRET)).status).toBe(401);
    // The signature covers the exact bytes: the same JSON re-serialized differently does not match.
    const raw = JSON.stringify(body, null, 2);
    const tampered = await t.request.post(`/hooks/channels/${wa.id}`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', hubSignature(WA_SECRET, JSON.stringify(body))).send(raw);
    expect(tampered.status).toBe(401);
    expect(await counts()).toBe(before);
    expect((await post(wa.id, { hello: 'world' }, WA_SECRET)).status).toBe(400);
    expect((await post(wa.id, null, WA_SECRET, '{"object": ')).status).toBe(400);
    expect(await counts()).toBe(before);
  });

  it('processes a WhatsApp text as POST /v1/messages does: customer by wa_id with its profile name, wamid kept, keyword started; a redelivery changes nothing', async () => {
    const { body, wamid } = whatsAppText(PHONE_ID, '15550002222', 'hello', 'Ana Diaz');
    const res = await post(wa.id, body, WA_SECRET);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ messages: 1, duplicates: 0, failed: 0 });
    const [customer] = await t.query<{ id: string; name: string; channel: string }>("select id, name, channel from customers where external_id = '15550002222'");
    expect(customer).toMatchObject({ name: 'Ana Diaz', channel: 'whatsapp' });
    const [message] = await t.query<{ provider_message_id: string; text: string; metadata: Record<string, unknown> }>(
      'select provider_message_id, text, metadata from messages where customer_id = ?',
      [customer!.id],
    );
    expect(message).toMatchObject({ provider_message_id: wamid, text: 'hello', metadata: { type: 'text', channel_connection_id: wa.id } });
    expect(await t.query('select id from executions where customer_id = ?', [customer!.id])).toHaveLength(1);
    const [window] = await t.query('select last_inbound_at from channel_customer_windows where connection_id = ? and external_id = ?', [wa.id, '15550002222']);
    expect(window).toBeDefined();

    const before = await counts();
    const again = await post(wa.id, body, WA_SECRET);
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ messages: 0, duplicates: 1 });
    expect(await counts()).toBe(before);
  });

  it('keeps interactive reply titles with their ids, and records other types with their type and media id', async () => {
    const button = whatsAppMessage(PHONE_ID, '15550003333', { type: 'interactive', interactive: { type: 'list_reply', list_reply: { id: 'score-9', title: '9', description: 'Very likely' } } });
    const image = whatsAppMessage(PHONE_ID, '15550003333', { type: 'image', image: { id: '1479537139650973', mime_type: 'image/jpeg', sha256: 'abc' } });
    const location = whatsAppMessage(PHONE_ID, '15550003333', { type: 'location', location: { latitude: 38.7, longitude: -9.1 } });
    for (const m of [button, image, location]) expect((await post(wa.id, m.body, WA_SECRET)).body.data.messages).toBe(1);
    const rows = await t.query<{ provider_message_id: string; text: string; metadata: Record<string, unknown> }>(
      "select m.provider_message_id, m.text, m.metadata from messages m join customers c on c.id = m.customer_id where c.external_id = '15550003333' order by m.created_at",
    );
    expect(rows).toEqual([
      { provider_message_id: button.wamid, text: '9', metadata: { type: 'interactive', interactive: { type: 'list_reply', id: 'score-9' }, channel_connection_id: wa.id } },
      { provider_message_id: image.wamid, text: '[image]', metadata: { type: 'image', media_id: '1479537139650973', channel_connection_id: wa.id } },
      { provider_message_id: location.wamid, text: '[location]', metadata: { type: 'location', location: { latitude: 38.7, longitude: -9.1 }, channel_connection_id: wa.id } },
    ]);
  });

  it('processes Instagram messages by IGSID and mid, ignores echoes of our own sends, and keeps the two channels apart', async () => {
    const message = instagramMessage(IG_ID, '6745610000000001', 'hello there');
    const echo = instagramMessage(IG_ID, '6745610000000001', 'Hi', { echo: true });
    const res = await post(ig.id, message.body, IG_SECRET);
    expect(res.body.data).toMatchObject({ messages: 1, ignored: 0 });
    expect((await post(ig.id, echo.body, IG_SECRET)).body.data).toMatchObject({ messages: 0, ignored: 1 });
    const rows = await t.query<{ channel: string; external_id: string; provider_message_id: string }>(
      'select c.channel, c.external_id, m.provider_message_id from messages m join customers c on c.id = m.customer_id where m.channel = ?',
      ['instagram'],
    );
    expect(rows).toEqual([{ channel: 'instagram', external_id: '6745610000000001', provider_message_id: message.mid }]);
    // A WhatsApp body sent to the Instagram connection is acknowledged and ignored.
    const stray = whatsAppText(PHONE_ID, '15550004444', 'hello');
    expect((await post(ig.id, stray.body, IG_SECRET)).body.data).toMatchObject({ messages: 0, ignored: 1 });
  });

  it("another organization's connection never receives this one's traffic", async () => {
    const otherKey = (await t.createKey('admin', await t.createOrg())).key;
    const other = (await t.request.post('/v1/channels').set(bearer(otherKey)).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: PHONE_ID, access_token: 'tok2', app_secret: 'other-secret' } })).body.data;
    const { body } = whatsAppText(PHONE_ID, '15550005555', 'hello');
    // Signed for the first organization's app, posted to the second's hook: refused.
    expect((await post(other.id, body, WA_SECRET)).status).toBe(401);
    expect((await post(other.id, body, 'other-secret')).status).toBe(200);
    const rows = await t.query<{ organization_id: string }>("select organization_id from customers where external_id = '15550005555'");
    expect(rows).toHaveLength(1);
    const [{ organization_id: org }] = await t.query<{ organization_id: string }>('select organization_id from channel_connections where id = ?', [other.id]) as [{ organization_id: string }];
    expect(rows[0]!.organization_id).toBe(org);
  });
});
