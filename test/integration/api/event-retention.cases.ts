/** Dispatched events are kept EVENT_RETENTION_DAYS, then deleted; undispatched ones never. */
import { EventDispatcher } from '../../../src/modules/webhooks/event-dispatcher';
import { createTestApp, type TestApp } from '../../helpers/app';

describe('event retention', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ EVENT_RETENTION_DAYS: '7' });
  });
  afterAll(() => t.close());

  it('deletes dispatched events older than the retention and keeps the rest', async () => {
    const org = await t.createOrg();
    const insert = (id: string, dispatchedDaysAgo: number | null) =>
      t.query(
        `insert into events (id, organization_id, type, data, created_at, dispatched_at)
         values (?, ?, 'message.received', '{}'::jsonb, now() - interval '30 days', ${dispatchedDaysAgo === null ? 'null' : `now() - interval '${dispatchedDaysAgo} days'`})`,
        [id, org],
      );
    await insert('evt_old_dispatched', 8);
    await insert('evt_recent_dispatched', 6);
    await insert('evt_old_pending', null);

    expect(await new EventDispatcher(t.services).purgeDispatched()).toBe(1);
    const left = await t.query<{ id: string }>('select id from events where organization_id = ? order by id', [org]);
    expect(left.map((r) => r.id)).toEqual(['evt_old_pending', 'evt_recent_dispatched']);
  });
});
