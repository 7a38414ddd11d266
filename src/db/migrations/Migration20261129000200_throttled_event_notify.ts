import { Migration } from '@mikro-orm/migrations';

/**
 * An insert into `events` sends NOTIFY only when no other insert sent one in the last
 * 50 ms (the time of the last one is kept in a sequence, which is read and set without a
 * row lock and outside the transaction).
 *
 * Why: PostgreSQL serializes the commits of every transaction that has sent NOTIFY,
 * database-wide (an exclusive lock from just before the commit until its WAL flush is
 * done), and nearly every write of the service inserts an event (a message received, a
 * message sent, an execution finished). Under the executions benchmark 10–11 % of the busy
 * database backends were queued on that lock (docs/performance.md). Throttled, at most
 * about twenty transactions a second take it, however many events are written.
 *
 * Nothing is left undelivered: a NOTIFY wakes the dispatcher, which then keeps polling
 * every few milliseconds for a while after its last wake or find
 * (src/modules/webhooks/event-dispatcher.ts, `TAIL_MS`), and an event whose insert skipped
 * the NOTIFY was inserted within 50 ms of one that sent it, so it commits while the
 * dispatcher is still polling unless its transaction stays open for longer than that tail;
 * then (and if the notifying transaction rolled back) the dispatcher's regular poll
 * (WEBHOOK_DISPATCH_POLL_MS) finds it.
 */
export class Migration20261129000200_throttled_event_notify extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create sequence events_notified_at_ms minvalue 0 start 0;
      create or replace function events_notify() returns trigger language plpgsql as $$
      declare
        now_ms bigint := (extract(epoch from clock_timestamp()) * 1000)::bigint;
      begin
        if now_ms - (select last_value from events_notified_at_ms) >= 50 then
          perform setval('events_notified_at_ms', now_ms);
          perform pg_notify('wfa_events', '');
        end if;
        return null;
      end $$;
    `);
  }
}
