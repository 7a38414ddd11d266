/**
 * The reconciler's claims (starts/durable-start.ts, `reconcileStarts`), against the real
 * PostgreSQL and Temporal: a row whose Temporal start hangs does not hold up another
 * process's pass, which starts the other rows meanwhile; once Temporal answers, the first
 * pass starts its row too, and every execution has exactly one run.
 *
 * "A worker whose Temporal hangs" is a second app on the same database whose client goes
 * through a TCP proxy that accepts connections and never forwards them (`stall`), until
 * `restore`. Rows are left unstarted by a third app whose client points at a namespace
 * that does not exist (as in test/executions/conversations/races.cases.ts).
 */
import { reconcileStarts } from '../../../src/modules/starts/durable-start';
import { EXECUTION_START } from '../../../src/modules/executions/execution.starter';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy';
import { createActiveWorkflow, waitFor } from '../helpers';

describe('reconciler claims', () => {
  let t: TestApp;
  let lost: TestApp;
  let hung: TestApp;
  let proxy: TcpProxy;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
    lost = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_NAMESPACE: 'wfa-test-nowhere' });
    const [host, port] = t.config.TEMPORAL_ADDRESS_EFFECTIVE.split(':');
    proxy = await startTcpProxy({ host: host!, port: Number(port) });
    hung = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}` });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await hung.close();
    await proxy.close();
    await lost.close();
    await t.close();
  });

  const row = async (id: string) =>
    (await t.query<{ started: boolean; claimed: boolean }>('select temporal_started_at is not null as started, start_claimed_until is not null as claimed from executions where id = ?', [id]))[0]!;

  it('a row whose Temporal start hangs does not block another pass; both rows start exactly once', async () => {
    await createActiveWorkflow(t, key, {
      name: 'Waiting form',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['join'] },
        nodes: [{ id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Your name?' }] }],
      },
    });
    // Two executions committed, their starts lost: the oldest first.
    const ids: string[] = [];
    for (const customer of ['first', 'second']) {
      const res = await lost.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: 'join' }).expect(201);
      ids.push(res.body.data.executions[0].id as string);
    }
    const [first, second] = ids as [string, string];
    expect(await row(first)).toEqual({ started: false, claimed: false });

    // The hung worker's pass claims the oldest row and waits on Temporal.
    await proxy.stall();
    const hungPass = reconcileStarts(hung.services, EXECUTION_START, { graceMs: 0, timeoutMs: 50_000 });
    await waitFor(async () => ((await row(first)).claimed ? true : undefined), 'the hung pass to claim the oldest row');

    // Meanwhile another process's pass is not blocked: it skips the claimed row and starts the other.
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBe(1);
    expect(await row(second)).toMatchObject({ started: true });
    expect(await row(first)).toEqual({ started: false, claimed: true });

    // Temporal answers again: the hung pass starts its row.
    await proxy.restore();
    expect(await hungPass).toBe(1);
    expect(await row(first)).toMatchObject({ started: true });

    // Exactly once: one run each, and nothing is left for another pass.
    for (const id of ids) {
      const handle = t.services.temporal.client.workflow.getHandle(id);
      expect((await handle.describe()).status.name).toBe('RUNNING');
      await handle.terminate('test over');
    }
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBe(0);
    expect(await reconcileStarts(hung.services, EXECUTION_START, { graceMs: 0 })).toBe(0);
  });

  it('organizations take turns: one organization\'s backlog of lost starts does not hold up another\'s', async () => {
    const other = (await t.createKey('admin', await t.createOrg())).key;
    const workflow = { name: 'Turns', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['turn'] }, nodes: [{ id: 'hi', type: 'message', content: 'Hi' }] } };
    await createActiveWorkflow(t, key, workflow);
    await createActiveWorkflow(t, other, workflow);
    const lostStart = async (k: string, customer: string) =>
      (await lost.request.post('/v1/messages').set(bearer(k)).send({ channel: 'whatsapp', customer_id: customer, message: 'turn' }).expect(201)).body.data.executions[0].id as string;
    // The first organization's three starts were lost before the other's one.
    const flood = [await lostStart(key, 'flood-1'), await lostStart(key, 'flood-2'), await lostStart(key, 'flood-3')];
    const single = await lostStart(other, 'single-1');
    // A pass of two starts: the flood's oldest, then the other organization's, not the flood's second.
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0, batch: 2 })).toBe(2);
    expect([await row(flood[0]!), await row(single)].map((r) => r.started)).toEqual([true, true]);
    expect([await row(flood[1]!), await row(flood[2]!)].map((r) => r.started)).toEqual([false, false]);
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBe(2);
    for (const id of [...flood, single]) await t.services.temporal.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
  });

  it('a start that fails gives its claim back, so the next pass retries it at once', async () => {
    const res = await lost.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'third', message: 'join' }).expect(201);
    const id = res.body.data.executions[0].id as string;
    // The lost app's pass fails to start it (no such namespace) and releases the claim.
    expect(await reconcileStarts(lost.services, EXECUTION_START, { graceMs: 0 })).toBe(0);
    expect(await row(id)).toEqual({ started: false, claimed: false });
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBe(1);
    expect(await row(id)).toMatchObject({ started: true });
    await t.services.temporal.client.workflow.getHandle(id).terminate('test over');
  });
});
