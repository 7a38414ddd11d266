/**
 * Facebook Messenger (`messenger`) end to end: a Page connection, `object: "page"` hooks signed
 * with a real HMAC, a real worker, and sends through a fake Graph API (a real HTTP server at
 * META_GRAPH_API_URL that checks every request against Meta's published OpenAPI).
 */
import { randomBytes } from 'node:crypto';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type FakeMeta, startFakeMeta, postSignedHook } from '../helpers/fake-meta';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow } from '../executions/helpers';

const PAGE_ID = '104729380000001';
const PAGE_TOKEN = 'EAAG-page-token';
const APP_SECRET = 'page-app-secret';

/** A Page webhook body: one customer message by PSID (or our own send echoed back). */
function pageMessage(pageId: string, psid: string, text: string, opts: { echo?: boolean } = {}) {
  const mid = `m_${randomBytes(12).toString('base64url')}`;
  const [sender, recipient] = opts.echo ? [pageId, psid] : [psid, pageId];
  const item = { sender: { id: sender }, recipient: { id: recipient }, timestamp: Date.now(), message: { mid, text, ...(opts.echo ? { is_echo: true } : {}) } };
  return { mid, body: { object: 'page', entry: [{ id: pageId, time: Date.now(), messaging: [item] }] } };
}

/** A Page webhook body: Messenger's delivery of our sends (`message_deliveries`). */
const pageDelivery = (pageId: string, psid: string, mids: string[]) => ({
  object: 'page',
  entry: [{ id: pageId, time: Date.now(), messaging: [{ sender: { id: psid }, recipient: { id: pageId }, delivery: { mids, watermark: Date.now() } }] }],
});

describe('Messenger', () => {
  let t: TestApp;
  let meta: FakeMeta;
  let worker: TestWorker;
  let admin: string;
  let page: { id: string; webhook_url: string };

  const hook = (id: string, body: unknown, secret = APP_SECRET) => {
    return postSignedHook(t.request, id, body, secret);
  };
  const sendsTo = (psid: string) => meta.sends.filter((s) => s.status === 200 && s.body?.recipient?.id === psid);
  const textsTo = (psid: string) => sendsTo(psid).map((s) => s.body?.message?.text);
  const messageCount = async () => Number((await t.query<{ n: string }>('select count(*) as n from messages'))[0]!.n);

  beforeAll(async () => {
    meta = await startFakeMeta();
    t = await createTestApp({ META_GRAPH_API_URL: meta.url, CHANNEL_PROVIDER_TIMEOUT_MS: '1000' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    admin = (await t.createKey('admin')).key;
    const created = await t.request
      .post('/v1/channels')
      .set(bearer(admin))
      .send({ type: 'messenger', name: 'Shop Page', config: { page_id: PAGE_ID, access_token: PAGE_TOKEN, app_secret: APP_SECRET } });
    expect(created.status).toBe(201);
    page = created.body.data;
    await createActiveWorkflow(t, admin, {
      name: 'Orders Messenger',
      channel: 'messenger',
      configuration: {
        trigger: { type: 'keyword', keywords: ['order'] },
        nodes: [
          { id: 'welcome', type: 'message', content: 'Welcome to the shop!', next: 'ask' },
          { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'bye' },
          { id: 'bye', type: 'message', content: 'Thanks, we will write to you.' },
        ],
      },
    });
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await meta.close();
  });

  it('connects a Page: webhook_url, the token and app secret write-only, /test reading the Page with the token', async () => {
    expect(page).toMatchObject({ type: 'messenger', channel: 'messenger', status: 'active', config: { page_id: PAGE_ID }, webhook_url: `${t.baseUrl}/hooks/channels/${page.id}` });
    expect(JSON.stringify(page)).not.toContain(PAGE_TOKEN);
    expect(JSON.stringify(page)).not.toContain(APP_SECRET);
    const tested = await t.request.post(`/v1/channels/${page.id}/test`).set(bearer(admin));
    expect(tested.body.data).toEqual({ ok: true, status_code: 200, error_message: null });
    const read = meta.reads.at(-1)!;
    expect(read.path).toMatch(new RegExp(`/${PAGE_ID}$`));
    expect(read.headers.authorization).toBe(`Bearer ${PAGE_TOKEN}`);
    const bad = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'messenger', name: 'Bad', config: { page_id: 'abc', access_token: 't', app_secret: 's' } });
    expect(bad.status).toBe(400);
  });

  it('a keyword starts the workflow, the form is answered, every send goes to the PSID; delivery statuses move the sends forward', async () => {
    const psid = '7001000000000001';
    await hook(page.id, pageMessage(PAGE_ID, psid, 'order').body).expect(200);
    await waitFor(async () => textsTo(psid).length >= 2 || undefined, 'welcome and the form prompt');
    expect(sendsTo(psid)[0]!.body).toEqual({ recipient: { id: psid }, messaging_type: 'RESPONSE', message: { text: 'Welcome to the shop!' } });
    expect(sendsTo(psid)[0]!.node).toBe(PAGE_ID);
    expect(sendsTo(psid)[0]!.authorization).toBe(`Bearer ${PAGE_TOKEN}`);
    // Our own send echoed back answers nothing.
    await hook(page.id, pageMessage(PAGE_ID, psid, 'Your email?', { echo: true }).body).expect(200);
    await hook(page.id, pageMessage(PAGE_ID, psid, 'ana@example.com').body).expect(200);
    const execution = await waitFor(async () => {
      const [e] = await t.query<{ id: string; status: string }>(
        "select e.id, e.status from executions e join customers c on c.id = e.customer_id where c.external_id = ? and c.channel = 'messenger'",
        [psid],
      );
      return e?.status === 'success' ? e : undefined;
    }, 'the execution to succeed');
    expect(textsTo(psid)).toEqual(['Welcome to the shop!', 'Your email?', 'Thanks, we will write to you.']);
    const [step] = await t.query<{ output: Record<string, unknown> }>("select output from execution_steps where execution_id = ? and node_id = 'ask'", [execution.id]);
    expect(step!.output).toMatchObject({ form_data: { email: 'ana@example.com' } });

    const mids = sendsTo(psid).map((s) => s.id);
    const delivered = await hook(page.id, pageDelivery(PAGE_ID, psid, mids.slice(0, 2))).expect(200);
    expect(delivered.body.data).toMatchObject({ statuses: 2 });
    const rows = await t.query<{ provider_message_id: string; status: string }>('select provider_message_id, status from channel_deliveries where connection_id = ? order by provider_message_id', [page.id]);
    expect(rows.filter((r) => r.status === 'delivered').map((r) => r.provider_message_id).sort()).toEqual(mids.slice(0, 2).sort());
  });

  it('refuses a wrong signature with 401 and records nothing', async () => {
    const before = await messageCount();
    const res = await hook(page.id, pageMessage(PAGE_ID, '7001000000000002', 'order').body, 'not-the-app-secret');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_SIGNATURE');
    expect(await messageCount()).toBe(before);
  });

  it("another organization sees none of it: its key gets 404, its app secret signs nothing for this Page", async () => {
    const other = await t.createKey('admin', await t.createOrg());
    expect((await t.request.get(`/v1/channels/${page.id}`).set(bearer(other.key))).status).toBe(404);
    const theirs = (
      await t.request
        .post('/v1/channels')
        .set(bearer(other.key))
        .send({ type: 'messenger', name: 'Their Page', config: { page_id: '104729380000002', access_token: 'their-token', app_secret: 'their-secret' } })
    ).body.data;
    const before = await messageCount();
    expect((await hook(page.id, pageMessage(PAGE_ID, '7001000000000003', 'order').body, 'their-secret')).status).toBe(401);
    expect(await messageCount()).toBe(before);
    const list = await t.request.get('/v1/channels?type=messenger').set(bearer(other.key));
    expect(list.body.data.map((c: { id: string }) => c.id)).toEqual([theirs.id]);
  });
});
