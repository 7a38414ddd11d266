/**
 * Secret rotation with overlap, against a real HTTPS receiver: during the overlap
 * (WEBHOOK_SECRET_OVERLAP_HOURS, here 0.002 h ≈ 7 s) a receiver still holding the old
 * secret verifies every delivery, and one holding the new secret verifies with the
 * `standardwebhooks` library; after the overlap only the new secret verifies.
 */
import { Webhook as StandardWebhook } from 'standardwebhooks';
import type { ReceivedRequest } from '../../helpers/https-receiver';
import { sleep } from '../../helpers/wait';
import { hexSignature, startWebhookKit, verifyStandardWebhook, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit({ WEBHOOK_SECRET_OVERLAP_HOURS: '0.002' });
});
afterAll(async () => {
  await kit?.close();
});

const OLD_SECRET = 'old-secret-0123456789-abcdef';

/** A consumer that has not switched yet: Standard Webhooks (any listed signature) or the hex headers. */
function oldSecretReceiverAccepts(req: ReceivedRequest): boolean {
  const hex = hexSignature(OLD_SECRET, req.body);
  const hexOk = req.headers['x-service-signature'] === hex || req.headers['x-service-signature-previous'] === hex;
  return hexOk && verifyStandardWebhook(OLD_SECRET, req);
}

/** A consumer on the new secret, verifying as the Standard Webhooks library does. */
function newSecretReceiverAccepts(secret: string, req: ReceivedRequest): boolean {
  try {
    new StandardWebhook(secret, { format: 'raw' }).verify(req.body, req.headers);
  } catch {
    return false;
  }
  return req.headers['x-service-signature'] === hexSignature(secret, req.body);
}

test('during the overlap both secrets verify every delivery; after it only the new one', async () => {
  const { orgId, auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/rotating', { secret: OLD_SECRET });

  await kit.emit(orgId, 'workflow.completed');
  const [before] = await kit.receiver.waitFor('/rotating', 1);
  expect(oldSecretReceiverAccepts(before!)).toBe(true);
  expect(before!.headers).not.toHaveProperty('x-service-signature-previous');

  const rotated = await kit.t.request.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(auth).send({});
  expect(rotated.status).toBe(200);
  const { secret: newSecret, previous_secret_expires_at: expiresAt } = rotated.body.data;
  expect(rotated.body.data.webhook_id).toBe(hook.id);
  expect(newSecret).toMatch(/^[\w-]{43}$/);
  expect(newSecret).not.toBe(OLD_SECRET);
  expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(3_000);
  expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(7_200);
  // GET shows the new secret; the old one is never answered again.
  const got = await kit.t.request.get(`/v1/webhooks/${hook.id}`).set(auth);
  expect(got.body.data.secret).toBe(newSecret);
  expect(JSON.stringify(got.body)).not.toContain(OLD_SECRET);
  expect(newSecretReceiverAccepts(newSecret, before!)).toBe(false);

  await kit.emit(orgId, 'workflow.completed');
  const during = (await kit.receiver.waitFor('/rotating', 2))[1]!;
  expect(Date.now()).toBeLessThan(Date.parse(expiresAt));
  expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2);
  expect(during.headers['x-service-signature']).toBe(hexSignature(newSecret, during.body));
  expect(during.headers['x-service-signature-previous']).toBe(hexSignature(OLD_SECRET, during.body));
  expect(oldSecretReceiverAccepts(during)).toBe(true);
  expect(newSecretReceiverAccepts(newSecret, during)).toBe(true);
  // The test endpoint signs the same way.
  const tested = await kit.t.request.post(`/v1/webhooks/${hook.id}/test`).set(auth).send({ event_type: 'workflow.completed' });
  expect(tested.body.data.status).toBe('success');
  const testReq = (await kit.receiver.waitFor('/rotating', 3))[2]!;
  expect(oldSecretReceiverAccepts(testReq)).toBe(true);
  expect(newSecretReceiverAccepts(newSecret, testReq)).toBe(true);

  await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 500);
  await kit.emit(orgId, 'workflow.completed');
  const after = (await kit.receiver.waitFor('/rotating', 4))[3]!;
  expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
  expect(after.headers).not.toHaveProperty('x-service-signature-previous');
  expect(oldSecretReceiverAccepts(after)).toBe(false);
  expect(newSecretReceiverAccepts(newSecret, after)).toBe(true);
});

test('a given secret is used as is; bad input is a 400, another organization gets 404', async () => {
  const { auth } = await kit.tenant();
  const hook = await kit.createHook(auth, '/rotate-given');
  const given = 'brand-new-secret-0123456789';
  const res = await kit.t.request.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(auth).send({ secret: given });
  expect(res.status).toBe(200);
  expect(res.body.data.secret).toBe(given);

  const short = await kit.t.request.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(auth).send({ secret: 'short' });
  expect(short.status).toBe(400);
  expect(short.body.error).toMatchObject({ code: 'INVALID_REQUEST', field: 'secret' });
  const unknown = await kit.t.request.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(auth).send({ secrets: given });
  expect(unknown.status).toBe(400);

  const other = await kit.tenant();
  const foreign = await kit.t.request.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(other.auth).send({});
  expect(foreign.status).toBe(404);
  expect(foreign.body.error.code).toBe('WEBHOOK_NOT_FOUND');
  const still = await kit.t.request.get(`/v1/webhooks/${hook.id}`).set(auth);
  expect(still.body.data.secret).toBe(given);
});
