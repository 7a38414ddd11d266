/**
 * Forbidden targets with WEBHOOK_ALLOW_PRIVATE_NETWORKS=false: refused when the webhook is
 * created, and again at connect time on the resolved address — a webhook whose name
 * resolves to 127.0.0.1 when sending (here `localhost`, standing for a name re-pointed
 * after creation) gets no request, one failed log row with response_code 0, no retries.
 */
import { randomBytes } from 'node:crypto';
import { sealSecret, sealedAt } from '../../../src/secrets';
import { deliveryWorkflowId } from '../../../temporal/webhooks.shared';
import { waitFor } from '../../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' });
});
afterAll(async () => {
  await kit?.close();
});

test.each([
  'https://localhost/hook',
  'https://127.0.0.1/hook',
  'https://10.1.2.3/hook',
  'https://172.16.0.1/hook',
  'https://192.168.1.1/hook',
  'https://169.254.169.254/latest/meta-data',
  'https://100.64.0.1/hook',
  'https://0.0.0.0/hook',
  'https://[::1]/hook',
  'https://[::ffff:127.0.0.1]/hook',
  'https://[fe80::1]/hook',
  'https://[fd00:ec2::254]/hook',
  'https://metadata.google.internal/computeMetadata/v1',
  // Documentation and other IANA special-purpose ranges (IPv4 and IPv6 registries).
  'https://192.0.2.10/hook',
  'https://198.51.100.10/hook',
  'https://203.0.113.10/hook',
  'https://192.88.99.1/hook',
  'https://192.31.196.1/hook',
  'https://[2001:db8::1]/hook',
  'https://[3fff::1]/hook',
  'https://[2002:c000:201::1]/hook',
  'https://[2001::1]/hook',
  'https://[100::1]/hook',
])('creating a webhook for %s is 400 INVALID_WEBHOOK_URL', async (url) => {
  const { auth } = await kit.tenant();
  const res = await kit.t.request.post('/v1/webhooks').set(auth).send({ url, events: ['workflow.completed'] });
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ code: 'INVALID_WEBHOOK_URL', field: 'url' });
});

test('a name that resolves to 127.0.0.1 at send time is refused at connect time, once, without retries', async () => {
  const { orgId, auth } = await kit.tenant();
  const hookId = `wh_${randomBytes(8).toString('hex')}`;
  // Written directly: the API refuses this URL, as it would have been accepted while the
  // name still resolved to a public address.
  await kit.t.query(
    `insert into webhooks (id, organization_id, name, url, events, secret, active, max_retries, retry_delay_ms)
     values (?, ?, 'rebound', ?, '{workflow.completed}', ?, true, 3, 100)`,
    [hookId, orgId, kit.receiver.url('/rebound'), sealSecret(kit.t.config, 'a-secret-of-enough-length', sealedAt.webhookSecret(hookId))],
  );
  const eventId = await kit.emit(orgId, 'workflow.completed');
  const handle = kit.t.services.temporal.client.workflow.getHandle(deliveryWorkflowId(eventId, hookId));
  await waitFor(async () => (await handle.describe()).status.name === 'FAILED');
  const logs = (await kit.t.request.get(`/v1/webhooks/${hookId}/logs`).set(auth)).body.data;
  expect(logs).toHaveLength(1);
  expect(logs[0]).toMatchObject({ attempt: 1, status: 'failed', response_code: 0 });
  expect(logs[0].error_message).toMatch(/forbidden address \(127\.0\.0\.1\)/);
  expect(kit.receiver.requestsTo('/rebound')).toHaveLength(0);

  const probe = await kit.t.request.post(`/v1/webhooks/${hookId}/test`).set(auth).send({ event_type: 'workflow.completed' });
  expect(probe.status).toBe(200);
  expect(probe.body.data).toMatchObject({ status: 'failed', response_code: 0 });
  expect(kit.receiver.requests).toHaveLength(0);
});

test('a host that does not resolve is accepted at creation; at delivery each attempt fails with the reason and is retried', async () => {
  const { orgId, auth } = await kit.tenant();
  const created = await kit.t.request
    .post('/v1/webhooks')
    .set(auth)
    .send({ url: 'https://receiver-goes-live-tomorrow.invalid/hook', events: ['workflow.completed'], retry_policy: { max_retries: 1, retry_delay_ms: 100 } });
  expect(created.status).toBe(201);
  const hookId = created.body.data.id as string;
  await kit.emit(orgId, 'workflow.completed');
  const logs = await waitFor(async () => {
    const rows = await kit.logs(auth, hookId);
    return rows.length === 2 && rows;
  }, 'two failed attempts');
  for (const [i, row] of logs.entries()) {
    expect(row).toMatchObject({ attempt: i + 1, status: 'failed', response_code: 0 });
    expect(row.error_message).toMatch(/connection failed \((ENOTFOUND|EAI_AGAIN)\)/);
  }
});
