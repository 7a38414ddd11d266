/**
 * Events that no webhook subscribes to are stamped in one statement, without the
 * dispatcher's transaction; the ones that have a subscriber are left to it and delivered.
 * The kit's running dispatcher is stopped here, so each step below is the test's own.
 */
import { stampUnsubscribedEvents } from '../../../src/modules/events/outbox';
import { EventDispatcher } from '../../../src/modules/webhooks/event-dispatcher';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit();
  await kit.dispatcher.stop();
});
afterAll(async () => {
  await kit?.close();
});

const dispatched = async (ids: string[]) => {
  const rows = await kit.t.query<{ id: string; dispatched: boolean }>(`select id, dispatched_at is not null as dispatched from events where id in (select jsonb_array_elements_text(?::jsonb))`, [JSON.stringify(ids)]);
  return Object.fromEntries(rows.map((r) => [r.id, r.dispatched]));
};

test('only events with a subscribed webhook are left for the delivery transaction, and it delivers them', async () => {
  const subscriber = await kit.tenant();
  await kit.createHook(subscriber.auth, '/subscribed');
  // An inactive webhook subscribes to nothing.
  const inactive = await kit.tenant();
  await kit.createHook(inactive.auth, '/inactive', { active: false });
  const nobody = await kit.tenant();
  const delivered = await kit.emit(subscriber.orgId, 'workflow.completed');
  const otherType = await kit.emit(subscriber.orgId, 'workflow.started');
  const unheard = [await kit.emit(nobody.orgId, 'workflow.completed'), await kit.emit(nobody.orgId, 'workflow.completed'), await kit.emit(inactive.orgId, 'workflow.completed')];

  const { stamped, subscribed } = await stampUnsubscribedEvents(kit.t.services.hotPool, 200);
  expect(subscribed).toBe(1);
  expect(stamped).toBeGreaterThanOrEqual(4);
  expect(await dispatched([delivered, otherType, ...unheard])).toEqual({
    [delivered]: false,
    [otherType]: true,
    ...Object.fromEntries(unheard.map((id) => [id, true])),
  });
  expect(kit.receiver.requestsTo('/subscribed')).toHaveLength(0);

  // The dispatcher's pass: the subscribed event is delivered and stamped; nothing else is.
  expect(await new EventDispatcher(kit.t.services).dispatchOnce()).toBe(1);
  const [request] = await kit.receiver.waitFor('/subscribed', 1);
  expect(request!.headers['x-service-event-id']).toBe(delivered);
  expect(await dispatched([delivered])).toEqual({ [delivered]: true });
  expect(kit.receiver.requestsTo('/inactive')).toHaveLength(0);
  expect(await stampUnsubscribedEvents(kit.t.services.hotPool, 200)).toEqual({ stamped: 0, subscribed: 0 });
});
