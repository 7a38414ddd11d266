/**
 * Debounced bursts (docs/executions.md, "Debounced bursts"), through two API processes
 * (each message through the next, in turn) and a real worker process: the messages of one customer that arrive within `debounce_ms` of each
 * other become ONE execution whose input `message` is their texts in arrival order.
 *
 * 1. The settings are validated (400 with the field) and returned.
 * 2. 50 customers each send a burst of three messages (only the first matches): 50
 *    executions, each with its three texts in order and their message ids.
 * 3. Simultaneous messages of one customer open one burst and all join it.
 * 4. The same as 2 with the worker SIGKILLed mid-burst and a new one started: the bursts
 *    stay open while no debouncer runs (messages keep joining), and each still closes into
 *    exactly one execution with every text.
 * 5. An API killed right after committing a burst's first message, before starting its
 *    debouncer: the worker's reconciler starts it, and the burst becomes one execution.
 *
 * Every wait is bounded and polls for a state.
 */
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { freePort, type SpawnedProcess, spawnService } from '../helpers/process';
import { createActiveWorkflow, waitFor } from './helpers';

jest.setTimeout(240_000);

const BURSTS = 50;
/** Long enough that a loaded machine answers a customer's next message inside it. */
const DEBOUNCE_MS = 4_000;
/**
 * How many customers write at the same moment: each customer's next message waits for the
 * answers to the others' in the one API process, and that gap must stay inside DEBOUNCE_MS.
 */
const AT_ONCE = 10;
/**
 * The crash case's window: every burst must still be open when the worker dies, after all
 * 50 customers have written twice and all 50 debouncers have started. On loaded CI machines
 * that took more than 2 s, and once more than 10 s, after the first customers' last message
 * (bursts closed before the kill, and their third messages found none to join). Its
 * `max_wait_ms` is the same, so each burst closes this long after its FIRST message, not
 * this long after the third one sent while no worker ran.
 */
const CRASH_DEBOUNCE_MS = 30_000;

/** `fn` over `items`, `AT_ONCE` at a time, results in the order of `items`. */
async function inWaves<T, R>(items: T[], fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += AT_ONCE) {
    results.push(...(await Promise.all(items.slice(i, i + AT_ONCE).map((item, j) => fn(item, i + j)))));
  }
  return results;
}

interface Posted {
  status: string;
  message_id: string;
  executions: Array<{ id: string | null; action: string; opened?: boolean; burst_id?: string; trigger_id: string | null; workflow_id: string }>;
}

describe('debounced bursts', () => {
  let t: TestApp;
  /** A second API process on the same database and task queue. */
  let other: TestApp;
  let key: string;
  const children: SpawnedProcess[] = [];
  /** The worker process the cases share; a crash case kills it and starts the next. */
  let worker: SpawnedProcess | undefined;

  const ensureWorker = async () => {
    if (worker) return worker;
    const p = spawnService('worker', t, { EXECUTION_RECONCILE_INTERVAL_MS: '200', EXECUTION_RECONCILE_GRACE_MS: '500' });
    children.push(p);
    await p.waitForLine(/worker running/, 60_000);
    worker = p;
    return p;
  };
  const killWorker = async () => {
    await worker?.kill('SIGKILL');
    worker = undefined;
  };

  /** Through the two API processes in turn, so a burst's messages arrive through both. */
  let turn = 0;
  const post = async (customer: string, message: string): Promise<Posted> => {
    const api = turn++ % 2 === 0 ? t : other;
    const res = await api.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message });
    if (res.status !== 200 && res.status !== 201) throw new Error(`POST /v1/messages: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Posted;
  };

  /** The workflow's executions once there are `count`, with their inputs. */
  const executionsOf = (workflowId: string, count: number) =>
    waitFor(
      async () => {
        const rows = await t.query<{ id: string; status: string; input: { message: string; message_ids: string[] }; customer_id: string; message_id: string }>(
          'select id, status, input, customer_id, message_id from executions where workflow_id = ?',
          [workflowId],
        );
        return rows.length >= count && rows.every((r) => r.status === 'success') ? rows : undefined;
      },
      `${count} successful executions of ${workflowId}`,
      120_000,
    );

  beforeAll(async () => {
    const limits = { RATE_LIMIT_CREDENTIAL_PER_HOUR: '100000', RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '100000' };
    t = await createTestApp(limits);
    other = await createTestApp({ ...limits, DATABASE_URL: t.databaseUrl, TEMPORAL_TASK_QUEUE: t.config.TEMPORAL_TASK_QUEUE });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    for (const c of children.splice(0)) await c.kill('SIGKILL');
    await other.close();
    await t.close();
  });

  it('validates debounce_ms and max_wait_ms on message triggers and workflow keyword triggers', async () => {
    const wf = await createActiveWorkflow(t, key, { name: 'Debounce validation', channel: 'whatsapp', configuration: { nodes: [{ id: 'a', type: 'message', content: 'hi' }] } });
    const trigger = (configuration: Record<string, unknown>) =>
      t.request.post('/v1/triggers').set(bearer(key)).send({ name: 'debounced', type: 'message', workflow_id: wf, configuration: { keywords: ['hi'], ...configuration } });

    const tooLong = await trigger({ debounce_ms: 30_001 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toMatchObject({ code: 'INVALID_TRIGGER_CONFIG', field: 'configuration.debounce_ms' });
    const shortWait = await trigger({ debounce_ms: 2_000, max_wait_ms: 1_000 });
    expect(shortWait.status).toBe(400);
    expect(shortWait.body.error).toMatchObject({ code: 'INVALID_TRIGGER_CONFIG', field: 'configuration.max_wait_ms' });
    const longWait = await trigger({ debounce_ms: 2_000, max_wait_ms: 120_001 });
    expect(longWait.status).toBe(400);
    expect(longWait.body.error).toMatchObject({ field: 'configuration.max_wait_ms' });

    const ok = await trigger({ debounce_ms: 2_000, max_wait_ms: 5_000 });
    expect(ok.status).toBe(201);
    expect(ok.body.data.configuration).toMatchObject({ debounce_ms: 2_000, max_wait_ms: 5_000 });

    const badWorkflow = await t.request
      .post('/v1/workflows')
      .set(bearer(key))
      .send({
        name: 'Debounce validation 2',
        channel: 'whatsapp',
        configuration: { trigger: { type: 'keyword', keywords: ['x'], debounce_ms: 500, max_wait_ms: 100 }, nodes: [{ id: 'a', type: 'message', content: 'hi' }] },
      });
    expect(badWorkflow.status).toBe(400);
    expect(badWorkflow.body.error).toMatchObject({ code: 'INVALID_WORKFLOW_CONFIG', field: 'configuration.trigger.max_wait_ms' });
  });

  it(`${BURSTS} bursts of three messages start ${BURSTS} executions, each with its texts in order`, async () => {
    const wf = await createActiveWorkflow(t, key, { name: 'Debounced greeter', channel: 'whatsapp', configuration: { nodes: [{ id: 'a', type: 'message', content: 'hi' }] } });
    const created = await t.request
      .post('/v1/triggers')
      .set(bearer(key))
      .send({ name: 'hello, debounced', type: 'message', workflow_id: wf, configuration: { keywords: ['hello'], debounce_ms: DEBOUNCE_MS, max_wait_ms: 20_000 } });
    expect(created.status).toBe(201);
    const triggerId = created.body.data.id as string;
    await ensureWorker();

    // A message that matches nothing and finds no open burst starts nothing.
    expect((await post('burst-none', 'just saying')).status).toBe('no_match');

    const bursts = await inWaves(
      Array.from({ length: BURSTS }, (_, i) => i),
      async (i) => {
        const customer = `burst-${i}`;
        const texts = [`hello ${i}`, `my order ${i}`, `is late ${i}`];
        const answers: Posted[] = [];
        for (const text of texts) answers.push(await post(customer, text));
        return { customer, texts, answers };
      },
    );
    for (const { answers } of bursts) {
      expect(answers.map((a) => a.status)).toEqual(['debounced', 'debounced', 'debounced']);
      expect(answers.map((a) => a.executions)).toEqual([
        [expect.objectContaining({ id: null, action: 'debounced', opened: true, trigger_id: triggerId, workflow_id: wf })],
        [expect.objectContaining({ action: 'debounced', opened: false, burst_id: answers[0]!.executions[0]!.burst_id })],
        [expect.objectContaining({ action: 'debounced', opened: false, burst_id: answers[0]!.executions[0]!.burst_id })],
      ]);
    }

    const rows = await executionsOf(wf, BURSTS);
    expect(rows).toHaveLength(BURSTS);
    const byFirstMessage = new Map(rows.map((r) => [r.message_id, r]));
    for (const { texts, answers } of bursts) {
      const execution = byFirstMessage.get(answers[0]!.message_id);
      expect(execution?.input).toMatchObject({ message: texts.join('\n'), message_ids: answers.map((a) => a.message_id) });
    }
    // One firing per burst, and the transcript links every message to its burst's execution.
    const firings = await t.query<{ n: string }>("select count(*) as n from trigger_executions where trigger_id = ? and status in ('running', 'success')", [triggerId]);
    expect(Number(firings[0]!.n)).toBe(BURSTS);
    const linked = await t.query<{ id: string; execution_id: string }>(
      "select id, execution_id from messages where direction = 'inbound' and execution_id in (select id from executions where workflow_id = ?)",
      [wf],
    );
    expect(linked).toHaveLength(BURSTS * 3);

    // After its burst closed, the customer's next matching message opens a new burst.
    const again = await post('burst-0', 'hello again');
    expect(again.executions).toEqual([expect.objectContaining({ action: 'debounced', opened: true })]);
    expect(again.executions[0]!.burst_id).not.toBe(bursts[0]!.answers[0]!.executions[0]!.burst_id);
    await executionsOf(wf, BURSTS + 1);
  });

  it('messages of one customer sent at the same moment open one burst and all join it', async () => {
    const wf = await createActiveWorkflow(t, key, {
      name: 'Debounced concurrent',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['ping'], debounce_ms: DEBOUNCE_MS }, nodes: [{ id: 'a', type: 'message', content: 'pong' }] },
    });
    await ensureWorker();
    const customers = Array.from({ length: 5 }, (_, i) => `together-${i}`);
    const answers = await Promise.all(customers.map((c) => Promise.all([1, 2, 3, 4].map((n) => post(c, `ping ${n}`)))));
    for (const a of answers) {
      expect(a.filter((m) => m.executions[0]?.opened === true)).toHaveLength(1);
      expect(new Set(a.map((m) => m.executions[0]?.burst_id)).size).toBe(1);
    }
    const rows = await executionsOf(wf, customers.length);
    expect(rows).toHaveLength(customers.length);
    for (const a of answers) {
      const execution = rows.find((r) => a.some((m) => m.message_id === r.message_id))!;
      const ids = execution.input.message_ids;
      expect([...ids].sort()).toEqual(a.map((m) => m.message_id).sort());
      // The texts are in the order of the ids: the one arrival order.
      const textOf = new Map(a.map((m, n) => [m.message_id, `ping ${n + 1}`]));
      expect(execution.input.message).toBe(ids.map((id) => textOf.get(id)).join('\n'));
    }
  });

  it('a redelivered message answers its first outcome and joins nothing twice', async () => {
    const wf = await createActiveWorkflow(t, key, {
      name: 'Debounced redelivery',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['quote'], debounce_ms: DEBOUNCE_MS }, nodes: [{ id: 'a', type: 'message', content: 'ok' }] },
    });
    await ensureWorker();
    const send = () =>
      t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'redelivered', message: 'quote me', provider_message_id: 'wamid.debounce.1' });
    const first = await send();
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    expect(again.body.data).toMatchObject({ status: 'debounced', executions: [{ action: 'debounced', opened: true, workflow_id: wf }] });
    const [execution] = await executionsOf(wf, 1);
    expect(execution!.input).toEqual({ message: 'quote me', message_ids: [first.body.data.message_id] });
  });

  it('a worker SIGKILLed mid-burst: every burst still becomes exactly one execution with all its texts', async () => {
    // The workflow's own keyword trigger, debounced.
    const wf = await createActiveWorkflow(t, key, {
      name: 'Debounced keyword',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['order'], debounce_ms: CRASH_DEBOUNCE_MS, max_wait_ms: CRASH_DEBOUNCE_MS }, nodes: [{ id: 'a', type: 'message', content: 'noted' }] },
    });
    await ensureWorker();
    const customers = Array.from({ length: BURSTS }, (_, i) => `crash-burst-${i}`);
    const sent = new Map<string, { texts: string[]; ids: string[] }>(customers.map((c) => [c, { texts: [], ids: [] }]));
    const send = async (customer: string, text: string) => {
      const answer = await post(customer, text);
      expect(answer.status).toBe('debounced');
      sent.get(customer)!.texts.push(text);
      sent.get(customer)!.ids.push(answer.message_id);
    };
    await inWaves(customers, async (c, i) => {
      await send(c, `order ${i}`);
      await send(c, `two ${i}`);
    });
    // Every debouncer is running (started and waiting) before the kill.
    await waitFor(async () => {
      const rows = await t.query<{ n: string }>("select count(*) as n from debounce_bursts where workflow_id = ? and temporal_started_at is not null", [wf]);
      return Number(rows[0]!.n) === BURSTS;
    }, 'every debouncer started');
    await killWorker();
    // What the case is about: every burst still open as its debouncer dies.
    const stillOpen = await t.query<{ n: string }>("select count(*) as n from debounce_bursts where workflow_id = ? and status = 'open'", [wf]);
    expect(Number(stillOpen[0]!.n)).toBe(BURSTS);

    // No worker: no burst can close, so these join their bursts whatever the clock says.
    await Promise.all(customers.map((c, i) => send(c, `three ${i}`)));
    await ensureWorker();

    const rows = await executionsOf(wf, BURSTS);
    expect(rows).toHaveLength(BURSTS);
    const byFirstMessage = new Map(rows.map((r) => [r.message_id, r]));
    for (const c of customers) {
      const { texts, ids } = sent.get(c)!;
      expect(byFirstMessage.get(ids[0]!)?.input).toEqual({ message: texts.join('\n'), message_ids: ids });
    }
    const open = await t.query("select id from debounce_bursts where workflow_id = ? and status = 'open'", [wf]);
    expect(open).toEqual([]);
  });

  it('an API killed after committing the message that opened a burst: the reconciler starts its debouncer, one execution', async () => {
    const wf = await createActiveWorkflow(t, key, {
      name: 'Debounced API crash',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['refund'], debounce_ms: DEBOUNCE_MS }, nodes: [{ id: 'a', type: 'message', content: 'on it' }] },
    });
    // No worker until the checks below: its reconciler would start the debouncer first.
    await killWorker();
    const port = await freePort();
    const api = spawnService('api', t, { PORT: String(port), FAILPOINTS: 'message.after_commit' });
    children.push(api);
    await api.waitForLine(/API listening/, 60_000);
    const posted = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(key) },
      body: JSON.stringify({ channel: 'whatsapp', customer_id: 'api-crash-burst', message: 'refund please' }),
    }).then(
      (r) => r.status,
      () => 'connection lost',
    );
    expect(posted).toBe('connection lost');
    await api.exited;
    const [burst] = await t.query<{ id: string; temporal_started_at: Date | null }>('select id, temporal_started_at from debounce_bursts where workflow_id = ?', [wf]);
    expect(burst).toMatchObject({ temporal_started_at: null });
    await expect(t.services.temporal.client.workflow.getHandle(`debounce:${burst!.id}`).describe()).rejects.toThrow();

    // The customer goes on writing through another API process: the message joins the committed burst.
    const next = await post('api-crash-burst', 'it was 42 dollars');
    expect(next.executions).toEqual([expect.objectContaining({ action: 'debounced', opened: false, burst_id: burst!.id })]);

    await ensureWorker();
    const [execution] = await executionsOf(wf, 1);
    expect(execution!.input).toEqual({ message: 'refund please\nit was 42 dollars', message_ids: [execution!.message_id, next.message_id] });
    expect(await t.query('select id from executions where workflow_id = ?', [wf])).toHaveLength(1);
  });
});
