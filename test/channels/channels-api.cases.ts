/**
 * `/v1/channels`: connections per organization, write-only secrets sealed at rest, the
 * verify token shown once, and `/test` against a fake Graph API (a real HTTP server).
 */
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type FakeMeta, graphError, startFakeMeta } from '../helpers/fake-meta';

describe('channel connections API', () => {
  let t: TestApp;
  let meta: FakeMeta;
  let admin: string;
  let reader: string;
  const lines: string[] = [];
  const TOKEN = `EAAG-access-token-${Date.now()}`;
  const APP_SECRET = `app-secret-${Date.now()}`;

  const whatsapp = (name = 'Support number') => ({ type: 'whatsapp_cloud', name, config: { phone_number_id: '106540352242922', access_token: TOKEN, app_secret: APP_SECRET } });

  beforeAll(async () => {
    meta = await startFakeMeta();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    t = await createTestApp({ META_GRAPH_API_URL: meta.url }, { logger: createLogger('debug', sink) });
    admin = (await t.createKey('admin')).key;
    reader = (await t.createKey('read')).key;
  });
  afterAll(async () => {
    await t.close();
    await meta.close();
  });

  it('creates a WhatsApp connection: webhook URL, verify token once, secrets never returned and sealed in the row', async () => {
    const res = await t.request.post('/v1/channels').set(bearer(admin)).send(whatsapp());
    expect(res.status).toBe(201);
    const c = res.body.data;
    expect(c).toMatchObject({ type: 'whatsapp_cloud', channel: 'whatsapp', name: 'Support number', status: 'active', config: { phone_number_id: '106540352242922' } });
    expect(c.id).toMatch(/^chn_/);
    expect(c.webhook_url).toBe(`${t.baseUrl}/hooks/channels/${c.id}`);
    expect(c.verify_token).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(JSON.stringify(res.body)).not.toContain(TOKEN);
    expect(JSON.stringify(res.body)).not.toContain(APP_SECRET);

    const got = await t.request.get(`/v1/channels/${c.id}`).set(bearer(reader));
    expect(got.status).toBe(200);
    expect(got.body.data.verify_token).toBeUndefined();
    expect(got.body.data.config).toEqual({ phone_number_id: '106540352242922' });
    const list = await t.request.get('/v1/channels?limit=5').set(bearer(reader));
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 5, total: 1 });
    for (const body of [got.body, list.body]) {
      for (const secret of [TOKEN, APP_SECRET, c.verify_token]) expect(JSON.stringify(body)).not.toContain(secret);
    }

    const [row] = await t.query<{ secrets: Record<string, string>; config: object }>('select secrets, config from channel_connections where id = ?', [c.id]);
    expect(Object.keys(row!.secrets).sort()).toEqual(['access_token', 'app_secret', 'verify_token']);
    for (const sealed of Object.values(row!.secrets)) expect(sealed).toMatch(/^v2:default:/);
    const stored = JSON.stringify(row);
    for (const secret of [TOKEN, APP_SECRET, c.verify_token]) expect(stored).not.toContain(secret);
    const logged = lines.join('');
    for (const secret of [TOKEN, APP_SECRET, c.verify_token]) expect(logged).not.toContain(secret);
  });

  it('refuses bad input with a clear 4xx and changes nothing; read keys cannot write', async () => {
    const before = await t.query('select id from channel_connections');
    const bad = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'whatsapp_cloud', name: 'x', config: { phone_number_id: 'abc', access_token: 't', app_secret: 's' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('config.phone_number_id');
    const wrongType = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'telegram', name: 'x', config: {} });
    expect(wrongType.status).toBe(400);
    const mixed = await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'instagram', name: 'x', config: { phone_number_id: '1', instagram_account_id: '2', access_token: 't', app_secret: 's' } });
    expect(mixed.status).toBe(400);
    expect((await t.request.post('/v1/channels').set(bearer(reader)).send(whatsapp('by reader'))).status).toBe(403);
    expect((await t.request.post('/v1/channels').set(bearer(admin)).send(whatsapp())).status).toBe(409);
    expect(await t.query('select id from channel_connections')).toEqual(before);
  });

  it('updates fields, replaces a secret only when sent, rotates the verify token, and deletes softly', async () => {
    const created = (await t.request.post('/v1/channels').set(bearer(admin)).send({ type: 'http', name: 'Bridge', config: { url: 'http://127.0.0.1:9/send', channel: 'voice', secret: 's1' } })).body.data;
    expect(created).toMatchObject({ type: 'http', channel: 'voice', webhook_url: null, config: { url: 'http://127.0.0.1:9/send', channel: 'voice' } });
    const [before] = await t.query<{ secrets: Record<string, string> }>('select secrets from channel_connections where id = ?', [created.id]);

    const renamed = await t.request.put(`/v1/channels/${created.id}`).set(bearer(admin)).send({ name: 'Bridge 2', config: { channel: 'whatsapp' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'Bridge 2', channel: 'whatsapp' });
    const [kept] = await t.query<{ secrets: Record<string, string> }>('select secrets from channel_connections where id = ?', [created.id]);
    expect(kept!.secrets.secret).toBe(before!.secrets.secret);
    await t.request.put(`/v1/channels/${created.id}`).set(bearer(admin)).send({ config: { secret: 's2' } }).expect(200);
    const [replaced] = await t.query<{ secrets: Record<string, string> }>('select secrets from channel_connections where id = ?', [created.id]);
    expect(replaced!.secrets.secret).not.toBe(before!.secrets.secret);
    const foreign = await t.request.put(`/v1/channels/${created.id}`).set(bearer(admin)).send({ config: { app_secret: 'x' } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.field).toBe('config.app_secret');

    const rotated = await t.request.post(`/v1/channels/${created.id}/rotate-verify-token`).set(bearer(admin));
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.verify_token).not.toBe(created.verify_token);

    expect((await t.request.delete(`/v1/channels/${created.id}`).set(bearer(admin))).status).toBe(200);
    expect((await t.request.get(`/v1/channels/${created.id}`).set(bearer(admin))).status).toBe(404);
    expect((await t.request.get('/v1/channels').set(bearer(admin))).body.data.map((c: { id: string }) => c.id)).not.toContain(created.id);
  });

  it('tests a connection against the Graph API and sets its status; another organization sees nothing', async () => {
    const c = (await t.request.post('/v1/channels').set(bearer(admin)).send(whatsapp('Tested'))).body.data;
    const ok = await t.request.post(`/v1/channels/${c.id}/test`).set(bearer(admin));
    expect(ok.body.data).toEqual({ ok: true, status_code: 200, error_message: null });
    const read = meta.reads.at(-1)!;
    expect(read.path).toBe('/v21.0/106540352242922');
    expect(read.headers.authorization).toBe(`Bearer ${TOKEN}`);

    meta.answerReads(graphError(401, 190, 'Error validating access token: Session has expired'));
    const expired = await t.request.post(`/v1/channels/${c.id}/test`).set(bearer(admin));
    expect(expired.body.data).toMatchObject({ ok: false, status_code: 401 });
    expect(expired.body.data.error_message).toContain('Session has expired');
    expect((await t.request.get(`/v1/channels/${c.id}`).set(bearer(admin))).body.data.status).toBe('unauthorized');
    // A new token makes it active again.
    const renewed = await t.request.put(`/v1/channels/${c.id}`).set(bearer(admin)).send({ config: { access_token: 'EAAG-new' } });
    expect(renewed.body.data.status).toBe('active');

    const other = (await t.createKey('admin', await t.createOrg())).key;
    expect((await t.request.get(`/v1/channels/${c.id}`).set(bearer(other))).status).toBe(404);
    expect((await t.request.post(`/v1/channels/${c.id}/test`).set(bearer(other))).status).toBe(404);
    expect((await t.request.get('/v1/channels').set(bearer(other))).body.data).toEqual([]);
  });
});
