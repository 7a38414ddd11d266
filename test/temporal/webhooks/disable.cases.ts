/**
 * Disabling after persistent failure, against a real HTTPS receiver: an endpoint that fails
 * every attempt for WEBHOOK_DISABLE_AFTER_HOURS (here 0.001 h = 3.6 s) with at least
 * WEBHOOK_DISABLE_MIN_ATTEMPTS (3) attempts is switched off with `persistent_failure`, a
 * 410 with `gone`; each emits `webhook.disabled` to the organization's other subscribed
 * webhooks, and re-activation clears the reason and starts the count afresh.
 */
import { waitFor } from '../../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit({ WEBHOOK_DISABLE_AFTER_HOURS: '0.001', WEBHOOK_DISABLE_MIN_ATTEMPTS: '3' });
});
afterAll(async () => {
  await kit?.close();
});

const getHook = async (auth: Record<string, string>, id: string) => (await kit.t.request.get(`/v1/webhooks/${id}`).set(auth)).body.data;

test('an endpoint failing every attempt is disabled (persistent_failure); a second webhook receives webhook.disabled', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/down', () => ({ status: 503 }));
  const failing = await kit.createHook(auth, '/down', { retry_policy: { max_retries: 10, retry_delay_ms: 1000 } });
  const watcher = await kit.createHook(auth, '/watcher', { events: ['webhook.disabled'] });
  const other = await kit.tenant(); // another organization's subscriber hears nothing
  await kit.createHook(other.auth, '/other-org-watcher', { events: ['webhook.disabled'] });

  await kit.emit(orgId, 'workflow.completed');
  const [notice] = await kit.receiver.waitFor('/watcher', 1, 60_000);
  const event = JSON.parse(notice!.body);
  expect(event).toMatchObject({
    type: 'webhook.disabled',
    data: { webhook_id: failing.id, name: 'localhost', url: failing.url, reason: 'persistent_failure', disabled_at: expect.any(String) },
    metadata: { webhook_id: watcher.id },
  });
  const got = await getHook(auth, failing.id);
  expect(got).toMatchObject({ active: false, disabled_reason: 'persistent_failure', disabled_at: event.data.disabled_at });
  // Disabled only after both thresholds: at least 3 failed attempts, the first 3.6 s before the last.
  const logs = await kit.logs(auth, failing.id);
  expect(logs.length).toBeGreaterThanOrEqual(3);
  expect(logs.every((l) => l.status === 'failed')).toBe(true);
  expect(Date.parse(logs.at(-1)!.delivered_at) - Date.parse(logs[0]!.delivered_at)).toBeGreaterThanOrEqual(3_600);
  // No attempt after the disabling; the list shows it too.
  const sent = kit.receiver.requestsTo('/down').length;
  expect(sent).toBe(logs.length);
  const list = await kit.t.request.get('/v1/webhooks?active=false').set(auth);
  expect(list.body.data).toEqual([expect.objectContaining({ id: failing.id, disabled_reason: 'persistent_failure' })]);
  expect(kit.receiver.requestsTo('/other-org-watcher')).toHaveLength(0);

  // Re-activated: the reason is cleared and the old failures no longer count (one new failure does not disable it).
  const upd = await kit.t.request.put(`/v1/webhooks/${failing.id}`).set(auth).send({ active: true, retry_policy: { max_retries: 0, retry_delay_ms: 100 } });
  expect(upd.status).toBe(200);
  expect(upd.body.data).toMatchObject({ active: true, disabled_reason: null, disabled_at: null });
  await kit.emit(orgId, 'workflow.completed');
  await kit.receiver.waitFor('/down', sent + 1);
  await waitFor(async () => (await kit.logs(auth, failing.id)).length === sent + 1);
  expect(await getHook(auth, failing.id)).toMatchObject({ active: true, disabled_reason: null });
  expect(kit.receiver.requestsTo('/down')).toHaveLength(sent + 1); // nothing missed is replayed
  expect(kit.receiver.requestsTo('/watcher')).toHaveLength(1);
});

test('a 410 disables at once with reason gone and emits webhook.disabled', async () => {
  const { orgId, auth } = await kit.tenant();
  kit.script('/gone-now', () => ({ status: 410 }));
  const gone = await kit.createHook(auth, '/gone-now');
  await kit.createHook(auth, '/gone-watcher', { events: ['webhook.disabled', 'workflow.completed'] });
  await kit.emit(orgId, 'workflow.completed');
  const notice = await waitFor(async () => kit.receiver.requestsTo('/gone-watcher').map((r) => JSON.parse(r.body)).find((b) => b.type === 'webhook.disabled'));
  expect(notice.data).toMatchObject({ webhook_id: gone.id, reason: 'gone' });
  expect(await getHook(auth, gone.id)).toMatchObject({ active: false, disabled_reason: 'gone', disabled_at: notice.data.disabled_at });
  expect(kit.receiver.requestsTo('/gone-now')).toHaveLength(1);
});
