/**
 * The sender verifies the receiver's certificate: against the system roots plus
 * WEBHOOK_EXTRA_CA_FILE's CA when configured, against the system roots alone otherwise.
 * The TLS context is built once per sender and shared by its connections, so this pins
 * that sharing it changed nothing about which certificates are trusted.
 */
import { readFileSync } from 'node:fs';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver';
import { WebhookSender } from '../../src/modules/webhooks/webhook.sender';

let receiver: HttpsReceiver;
const senders: WebhookSender[] = [];
beforeAll(async () => {
  receiver = await startHttpsReceiver(() => ({ status: 200, body: 'ok' }));
});
afterAll(async () => {
  for (const s of senders) await s.close();
  await receiver?.close();
});

const sender = (extraCa?: string) => {
  const s = new WebhookSender({ timeoutMs: 5_000, allowPrivateNetworks: true, openSecret: (stored: string) => stored, ...(extraCa ? { extraCa } : {}) });
  senders.push(s);
  return s;
};
const send = (s: WebhookSender, path: string) => s.send({ webhookId: 'wh_tls', url: receiver.url(path), secret: 'a-secret-of-enough-length', body: '{}', eventId: 'evt_tls', attempt: 1 });

test('a receiver whose CA is the configured extra CA is trusted, on every connection', async () => {
  const s = sender(readFileSync(receiver.caFile, 'utf8'));
  const outcomes = await Promise.all(Array.from({ length: 4 }, () => send(s, '/trusted')));
  expect(outcomes.map((o) => (o.answered ? o.status : o.error))).toEqual([200, 200, 200, 200]);
});

test('without the extra CA the same receiver is refused: no request reaches it', async () => {
  const outcome = await send(sender(), '/untrusted');
  expect(outcome).toMatchObject({ answered: false, reason: 'connection' });
  expect(receiver.requestsTo('/untrusted')).toHaveLength(0);
});
