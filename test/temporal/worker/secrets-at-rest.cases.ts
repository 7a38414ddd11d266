/**
 * Webhook signing secrets and webhook trigger secrets at rest: the rows hold AES-256-GCM
 * ciphertext (src/secrets.ts), the API still answers the secret where it did, deliveries
 * are still signed with it and trigger hooks still verify against it. Rows written in clear
 * before are sealed by Migration20261212000100, after which the same secrets still work.
 */
import { createHmac } from 'node:crypto';
import { Migration20261212000100_sealed_webhook_trigger_secrets as SealSecrets } from '../../../src/db/migrations/Migration20261212000100_sealed_webhook_trigger_secrets';
import { keyringOf, type SecretPlace, sealedAt } from '../../../src/secrets';
import { hexSignature, startWebhookKit, verifyStandardWebhook, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit();
});
afterAll(async () => {
  await kit.close();
});

const rawWebhook = async (id: string) => (await kit.t.query<{ secret: string; previous_secret: string | null }>('select secret, previous_secret from webhooks where id = ?', [id]))[0]!;
const rawTriggerSecret = async (id: string) => (await kit.t.query<{ secret: string }>("select configuration->>'secret' as secret from triggers where id = ?", [id]))[0]!.secret;
/** `v2:` under the sealing key, bound to its place; `v1:` as the migration seals (before the keyring). */
const expectSealed = (stored: string | null, clear: string, place: SecretPlace, format = /^v2:default:/) => {
  expect(stored).toMatch(format);
  expect(stored).not.toContain(clear);
  expect(keyringOf(kit.t.config).open(stored!, place)).toBe(clear);
};
const runMigration = async () => {
  const orm = kit.t.services.orm;
  await new SealSecrets(orm.em.getDriver(), orm.config).up();
};
const webhookTrigger = async (auth: Record<string, string>) => {
  const wf = await kit.t.request.post('/v1/workflows').set(auth).send({ name: 'Notify', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Ping' }] } });
  expect((await kit.t.request.post(`/v1/workflows/${wf.body.data.id}/activate`).set(auth)).status).toBe(200);
  const trigger = await kit.t.request.post('/v1/triggers').set(auth).send({ workflow_id: wf.body.data.id, name: 'Order hook', type: 'webhook', configuration: {} });
  expect(trigger.status).toBe(201);
  return trigger.body.data as { id: string; configuration: { secret: string; url: string } };
};
const fireHook = (trigger: { configuration: { url: string } }, secret: string) => {
  const body = JSON.stringify({ order_id: 'A-1' });
  const sign = createHmac('sha256', secret).update(body).digest('hex');
  return kit.t.request.post(new URL(trigger.configuration.url).pathname).set('Content-Type', 'application/json').set('X-Service-Signature', sign).send(body);
};

test('a webhook secret is stored sealed, answered in clear, and deliveries are signed with it, across a rotation', async () => {
  const { orgId, auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/sealed', { secret: 'a-webhook-secret-of-enough-length' });
  expect(hook.secret).toBe('a-webhook-secret-of-enough-length');
  expectSealed((await rawWebhook(hook.id)).secret, hook.secret, sealedAt.webhookSecret(hook.id));
  expect((await kit.t.request.get(`/v1/webhooks/${hook.id}`).set(auth)).body.data.secret).toBe(hook.secret);

  await kit.emit(orgId, 'workflow.completed');
  const [first] = await kit.receiver.waitFor('/sealed', 1);
  expect(first!.headers['x-service-signature']).toBe(hexSignature(hook.secret, first!.body));
  expect(verifyStandardWebhook(hook.secret, first!)).toBe(true);

  const rotated = await kit.t.request.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(auth).send({});
  expect(rotated.status).toBe(200);
  const next = rotated.body.data.secret as string;
  const row = await rawWebhook(hook.id);
  expectSealed(row.secret, next, sealedAt.webhookSecret(hook.id));
  expectSealed(row.previous_secret, hook.secret, sealedAt.webhookPreviousSecret(hook.id));
  await kit.emit(orgId, 'workflow.completed');
  const [, second] = await kit.receiver.waitFor('/sealed', 2);
  expect(second!.headers['x-service-signature']).toBe(hexSignature(next, second!.body));
  expect(second!.headers['x-service-signature-previous']).toBe(hexSignature(hook.secret, second!.body));
});

test('a webhook trigger secret is stored sealed, answered in clear, and its hook verifies against it', async () => {
  const { auth } = await kit.tenant();
  const trigger = await webhookTrigger(auth);
  const secret = trigger.configuration.secret;
  expect(secret).not.toMatch(/^v[12]:/);
  expectSealed(await rawTriggerSecret(trigger.id), secret, sealedAt.triggerSecret(trigger.id));
  expect((await kit.t.request.get(`/v1/triggers/${trigger.id}`).set(auth)).body.data.configuration.secret).toBe(secret);
  expect((await kit.t.request.get('/v1/triggers').set(auth)).body.data[0].configuration.secret).toBeUndefined();
  expect((await fireHook(trigger, secret)).status).toBe(202);
  expect((await fireHook(trigger, 'another-secret-of-enough-length')).status).toBe(401);
  // An update without a secret keeps it.
  const kept = await kit.t.request.put(`/v1/triggers/${trigger.id}`).set(auth).send({ configuration: { headers: {} } });
  expect(kept.status).toBe(200);
  expect(kept.body.data.configuration.secret).toBe(secret);
  expectSealed(await rawTriggerSecret(trigger.id), secret, sealedAt.triggerSecret(trigger.id));
});

test('the migration seals secrets stored in clear before it, and they keep signing and verifying', async () => {
  const { orgId, auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/migrated');
  const trigger = await webhookTrigger(auth);
  // As rows written before secrets were sealed.
  await kit.t.query('update webhooks set secret = ?, previous_secret = null where id = ?', ['a-clear-legacy-webhook-secret', hook.id]);
  await kit.t.query(`update triggers set configuration = jsonb_set(configuration, '{secret}', to_jsonb(?::text)) where id = ?`, ['a-clear-legacy-trigger-secret', trigger.id]);

  await runMigration();
  expectSealed((await rawWebhook(hook.id)).secret, 'a-clear-legacy-webhook-secret', sealedAt.webhookSecret(hook.id), /^v1:/);
  expectSealed(await rawTriggerSecret(trigger.id), 'a-clear-legacy-trigger-secret', sealedAt.triggerSecret(trigger.id), /^v1:/);
  // A second run changes nothing.
  const sealed = (await rawWebhook(hook.id)).secret;
  await runMigration();
  expect((await rawWebhook(hook.id)).secret).toBe(sealed);

  await kit.emit(orgId, 'workflow.completed');
  const [req] = await kit.receiver.waitFor('/migrated', 1);
  expect(req!.headers['x-service-signature']).toBe(hexSignature('a-clear-legacy-webhook-secret', req!.body));
  expect((await fireHook(trigger, 'a-clear-legacy-trigger-secret')).status).toBe(202);
});
