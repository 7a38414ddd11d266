/**
 * The events NOTIFY is throttled (Migration20261129000200_throttled_event_notify): an
 * event inserted right after another one sends none, and is still delivered at once,
 * found by the dispatcher's polling after its wake. The dispatcher here polls once an hour
 * (its own, in place of the kit's), so within the test's time only a NOTIFY or that tail
 * can deliver; and once the dispatcher reports itself idle (past its tail), only a NOTIFY.
 */
import { Client } from 'pg';
import { EVENTS_CHANNEL, EventDispatcher } from '../../../src/modules/webhooks/event-dispatcher';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';
import { waitFor } from '../../helpers/wait';

let kit: WebhookKit;
let dispatcher: EventDispatcher;
let listener: Client;
let notifications = 0;

/** As if another transaction had sent the NOTIFY a moment ago: the next inserts send none. */
const notifiedJustNow = () => kit.t.query(`select setval('events_notified_at_ms', (extract(epoch from clock_timestamp()) * 1000)::bigint + 60000)`);
const notifyFreely = () => kit.t.query(`select setval('events_notified_at_ms', 0)`);

beforeAll(async () => {
  kit = await startWebhookKit();
  // An hour between regular polls (past the setting's bound): never within this file's time.
  await kit.dispatcher.stop();
  dispatcher = new EventDispatcher(kit.t.services, { pollMs: 3_600_000 });
  dispatcher.start();
  listener = new Client({ connectionString: kit.t.databaseUrl });
  await listener.connect();
  listener.on('notification', () => notifications++);
  await listener.query(`LISTEN ${EVENTS_CHANNEL}`);
});
afterEach(() => notifyFreely());
afterAll(async () => {
  await listener?.end();
  await dispatcher?.stop();
  await kit?.close();
});

test('an event inserted without a NOTIFY right after one with it is delivered too', async () => {
  const { orgId, auth } = await kit.tenant();
  await kit.createHook(auth, '/burst');
  await notifyFreely();
  notifications = 0;
  await kit.emit(orgId, 'workflow.completed');
  await notifiedJustNow();
  const quiet = await kit.emit(orgId, 'workflow.completed');
  const reqs = await kit.receiver.waitFor('/burst', 2);
  expect(reqs.map((r) => r.headers['x-service-event-id'])).toContain(quiet);
  expect(notifications).toBe(1);
});

test('a dispatcher idle past its tail is woken by the next NOTIFY', async () => {
  const { orgId, auth } = await kit.tenant();
  await kit.createHook(auth, '/idle');
  // Past the dispatcher's polling tail (its last wake was the webhook's own events, if any):
  // with the next regular poll an hour away, only a NOTIFY wakes it now.
  await waitFor(async () => dispatcher.isIdle(), 'the dispatcher to be idle past its tail');
  notifications = 0;
  const eventId = await kit.emit(orgId, 'workflow.completed');
  const [req] = await kit.receiver.waitFor('/idle', 1);
  expect(req!.headers['x-service-event-id']).toBe(eventId);
  expect(notifications).toBe(1);
});
