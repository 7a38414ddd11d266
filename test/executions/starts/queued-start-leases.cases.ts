/**
 * A start waiting for its organization's share of the API's slots is leased to that API
 * (executions/queued-start-leases.ts): the worker's reconciler leaves it to the queue
 * instead of starting it in a burst beside the queue, and gets it back at once when the API
 * drops its queue at shutdown. Real PostgreSQL and Temporal.
 *
 * The API under test (`flooded`) reaches Temporal through a TCP proxy that stalls, so the
 * starts it admits hang and hold its two slots (BACKGROUND_CALLS_IN_FLIGHT=2), one each for
 * B and A; the rest of A's starts wait in its queue. The
 * reconciler's pass runs on another app of the same database (`t`), as a worker's does.
 */
import { EXECUTION_START } from '../../../src/modules/executions/execution.starter';
import { reconcileStarts } from '../../../src/modules/starts/durable-start';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy';
import { createActiveWorkflow, waitFor } from '../helpers';

describe('leases on queued starts', () => {
  let t: TestApp;
  let flooded: TestApp | undefined;
  let proxy: TcpProxy;

  beforeAll(async () => {
    t = await createTestApp();
    const [host, port] = t.config.TEMPORAL_ADDRESS_EFFECTIVE.split(':');
    proxy = await startTcpProxy({ host: host!, port: Number(port) });
  });
  afterAll(async () => {
    await proxy.restore();
    await flooded?.close();
    await proxy.close();
    await t.close();
  });

  const rows = (ids: string[]) =>
    t.query<{ id: string; started: boolean; leased: boolean }>(
      `select id, temporal_started_at is not null as started, coalesce(start_claimed_until > now() + interval '5 seconds', false) as leased
         from executions where id = any(string_to_array(?, ',')) order by started_at, id`,
      [ids.join(',')],
    );

  it('the reconciler leaves the starts waiting in an API\'s queue to it, and takes them when the API drops its queue', async () => {
    const keyA = (await t.createKey('admin')).key;
    const keyB = (await t.createKey('admin', await t.createOrg())).key;
    const workflow = { name: 'Greeter', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'hi', type: 'message', content: 'Hello' }] } };
    await createActiveWorkflow(t, keyA, workflow);
    await createActiveWorkflow(t, keyB, workflow);
    flooded = await createTestApp({
      DATABASE_URL: t.databaseUrl,
      TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}`,
      // The admitted starts hang for the whole case; the drain at the end waits this out.
      TEMPORAL_CALL_TIMEOUT_MS: '8000',
      BACKGROUND_CALLS_IN_FLIGHT: '2',
      INBOUND_MESSAGES_PER_ORGANIZATION: '1',
    });
    await proxy.stall();
    const post = async (key: string, customer: string) =>
      (await flooded!.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: 'hi' }).expect(201)).body.data
        .executions[0].id as string;

    // B is active (its start hangs in its slot); A sends four at once: each is answered,
    // recorded one at a time, and one start takes A's slot while the other three wait.
    const b = await post(keyB, 'b-1');
    const a = await Promise.all(['a-1', 'a-2', 'a-3', 'a-4'].map((c) => post(keyA, c)));
    const waiting = await waitFor(async () => {
      const leased = (await rows(a)).filter((r) => r.leased);
      return leased.length === 3 ? leased.map((r) => r.id) : undefined;
    }, 'the three waiting starts to be leased');
    expect((await rows(a)).every((r) => !r.started)).toBe(true);

    // A reconciler pass past the grace starts the two rows not waiting (A's admitted one and
    // B's: both hang in the flooded API) and leaves the waiting three to the queue.
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBe(2);
    expect((await rows([...a, b])).filter((r) => r.started).map((r) => r.id).sort()).toEqual([a.find((id) => !waiting.includes(id))!, b].sort());

    // Shutdown drops the queue and gives its leases back: the next pass starts the three.
    await flooded.close();
    flooded = undefined;
    expect((await rows(waiting)).map((r) => r.leased)).toEqual([false, false, false]);
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBe(3);
    expect((await rows([...a, b])).every((r) => r.started)).toBe(true);
    for (const id of [...a, b]) await t.services.temporal.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
  });
});
