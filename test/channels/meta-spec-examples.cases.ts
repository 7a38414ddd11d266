/**
 * Meta's own example webhook bodies (the 16 of `POST /whatsapp/webhooks` in Meta's published
 * OpenAPI, test/fixtures/meta-openapi/), each signed with the connection's app secret and
 * posted to the connection's hook as Meta would, with only `metadata.phone_number_id`
 * rewritten to the test connection's. Each must record what it carries: the message row
 * (text, type, ids), the customer and its name, the events; the group notices nothing.
 *
 * Each example is replayed in an organization of its own: the spec reuses one wamid for its
 * Text, Reaction, Image and Contact examples, and a wamid already received on a channel is a
 * redelivery, recorded once.
 *
 * What the code before issue #46 got wrong with these examples (the system notice recorded as a customer
 * message, placeholders matching keywords, the ad referral and the reaction's target dropped)
 * is asserted in meta-spec-gaps.cases.ts (issue #46), and fixed.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type FakeMeta, startFakeMeta, postSignedHook } from '../helpers/fake-meta';
import { firstMessage, metaWebhookExamples, toPhoneNumber } from '../helpers/meta-spec-examples';

const SECRET = 'spec-app-secret';
const SENDER = '16505551234';

interface Replayed {
  status: number;
  summary: { messages: number; duplicates: number; statuses: number; ignored: number; failed: number };
  org: string;
  messages: Array<{ text: string; direction: string; metadata: Record<string, any>; provider_message_id: string; external_id: string; name: string | null }>;
  customers: number;
  events: string[];
}

describe("Meta's OpenAPI webhook examples replayed through the hook", () => {
  let t: TestApp;
  let meta: FakeMeta;
  const examples = metaWebhookExamples();
  let next = 0;

  /** Posts one spec example to a fresh connection of a fresh organization; returns what it recorded. */
  const replay = async (name: string): Promise<Replayed> => {
    const example = examples.get(name);
    if (!example) throw new Error(`no example ${name} in Meta's spec`);
    const org = await t.createOrg();
    const admin = (await t.createKey('admin', org)).key;
    const phoneNumberId = String(106540352242000 + next++);
    const created = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: phoneNumberId, access_token: 'tok', app_secret: SECRET } });
    expect(created.status).toBe(201);
    const res = await postSignedHook(t.request, created.body.data.id, toPhoneNumber(example, phoneNumberId), SECRET);
    const messages = await t.query<Replayed['messages'][number]>(
      'select m.text, m.direction, m.metadata, m.provider_message_id, c.external_id, c.name from messages m join customers c on c.id = m.customer_id where m.organization_id = ? order by m.created_at',
      [org],
    );
    const n = (await t.query<{ n: string }>('select count(*) as n from customers where organization_id = ?', [org]))[0]!.n;
    const events = (await t.query<{ type: string }>('select type from events where organization_id = ? order by created_at, type', [org])).map((e) => e.type);
    return { status: res.status, summary: res.body.data, org, messages, customers: Number(n), events };
  };

  /** The one inbound message an example must record, from the spec's sender, with its wamid. */
  const recordedOne = async (name: string) => {
    const r = await replay(name);
    expect(r.status).toBe(200);
    expect(r.summary).toEqual({ messages: 1, duplicates: 0, statuses: 0, ignored: 0, failed: 0 });
    expect(r.messages).toHaveLength(1);
    const [m] = r.messages;
    expect(m).toMatchObject({ direction: 'inbound', external_id: SENDER, name: 'Sheena Nelson', provider_message_id: firstMessage(examples.get(name)).id });
    expect(m!.metadata.channel_connection_id).toMatch(/^chn_/);
    expect(r.customers).toBe(1);
    expect(r.events).toEqual(expect.arrayContaining(['customer.created', 'message.received']));
    return m!;
  };

  beforeAll(async () => {
    meta = await startFakeMeta();
    t = await createTestApp({ META_GRAPH_API_URL: meta.url });
  });
  afterAll(async () => {
    await t.close();
    await meta.close();
  });

  it('the spec has the 16 examples this file replays', () => {
    expect([...examples.keys()].sort()).toEqual(
      [
        'Button Message',
        'Contact Sharing Message',
        'Group Create Message',
        'Group Remove Participants',
        'Group Settings Update',
        'Image Message',
        'Interactive Button Reply Message',
        'Interactive List Reply Message',
        'Location Message',
        'Order Message',
        'Reaction Message',
        'System Message',
        'Text Message',
        'Text Message from Click to WhatsApp Ad',
        'Text Message with Context (Product Inquiry)',
        'Unsupported Message',
      ].sort(),
    );
  });

  it('Text Message: the text, from the sender, with the profile name', async () => {
    const m = await recordedOne('Text Message');
    expect(m).toMatchObject({ text: 'Does it come in another color?', metadata: { type: 'text' } });
  });

  it('Text Message with Context (Product Inquiry): the text', async () => {
    expect(await recordedOne('Text Message with Context (Product Inquiry)')).toMatchObject({ text: 'Is this still available?', metadata: { type: 'text' } });
  });

  it('Text Message from Click to WhatsApp Ad: the text', async () => {
    expect(await recordedOne('Text Message from Click to WhatsApp Ad')).toMatchObject({ text: 'Hello! Can I get more info on this?', metadata: { type: 'text' } });
  });

  it('Button Message: the quick-reply text and its payload', async () => {
    expect(await recordedOne('Button Message')).toMatchObject({ text: 'Unsubscribe', metadata: { type: 'button', button_payload: 'Unsubscribe' } });
  });

  it('Interactive List Reply Message: the row title and id', async () => {
    expect(await recordedOne('Interactive List Reply Message')).toMatchObject({
      text: 'Priority Mail Express',
      metadata: { type: 'interactive', interactive: { type: 'list_reply', id: 'priority_express' } },
    });
  });

  it('Interactive Button Reply Message: the button title and id', async () => {
    const reply = firstMessage(examples.get('Interactive Button Reply Message')).interactive.button_reply;
    expect(await recordedOne('Interactive Button Reply Message')).toMatchObject({ text: reply.title, metadata: { type: 'interactive', interactive: { type: 'button_reply', id: reply.id } } });
  });

  it('Image Message: the media id and the caption', async () => {
    expect((await recordedOne('Image Message')).metadata).toMatchObject({ type: 'image', media_id: '1003383421387256', caption: 'Taj Mahal' });
  });

  it('Location Message: the coordinates', async () => {
    expect((await recordedOne('Location Message')).metadata).toMatchObject({ type: 'location', location: { latitude: 37.44221496582, longitude: -122.16165924072 } });
  });

  it('Contact Sharing Message, Reaction Message, Order Message and Unsupported Message: recorded with their type', async () => {
    expect((await recordedOne('Contact Sharing Message')).metadata.type).toBe('contacts');
    expect((await recordedOne('Reaction Message')).metadata.type).toBe('reaction');
    expect((await recordedOne('Order Message')).metadata.type).toBe('order');
    expect((await recordedOne('Unsupported Message')).metadata.type).toBe('unsupported');
  });

  it.each(['Group Create Message', 'Group Settings Update', 'Group Remove Participants'])('%s: acknowledged, nothing recorded (a group notice is no customer message)', async (name) => {
    const r = await replay(name);
    expect(r.status).toBe(200);
    expect(r.summary).toMatchObject({ messages: 0, statuses: 0, failed: 0 });
    expect(r.messages).toEqual([]);
    expect(r.customers).toBe(0);
  });

  it('every request the service made on the way conformed to Meta’s spec', () => {
    meta.conformance.assertConforms();
  });
});
