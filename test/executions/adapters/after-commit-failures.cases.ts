/**
 * What fails after a commit must not turn the committed request into an error that a client
 * answers by sending it again (a 503 says "nothing changed").
 * - A skipped start's answer names the execution that holds the customer's slot, read after
 *   the message's commit. On a loaded machine that read once timed out on a busy pool, and
 *   the committed message was answered 503: the client resent it and the transcript had it
 *   twice. Here the real pool refuses that one read (its statement, by name) as a busy pool
 *   does: the message is answered 201 and recorded once, the skip still said, its holder's
 *   id null.
 * - An api trigger's fire stamps its execution's Temporal start after the commit. Here that
 *   stamp fails: the fire is answered 201, recorded once, and its execution runs.
 * - An `Idempotency-Key` request stores its answer after its work. Here storing fails: the
 *   answer still goes out (201), and the message is recorded once.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker } from '../../helpers/temporal';
import { createActivities } from '../../../temporal/activities';
import { createActiveWorkflow, waitForExecution } from '../helpers';

describe('a skipped start whose slot holder cannot be read after the commit', () => {
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    t = await createTestApp();
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is answered 201 with the skip and no holder id, and the message is recorded once', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Greeter',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'hi', type: 'message', content: 'Welcome' }] },
    });
    // No worker: the first execution stays running and holds the customer's slot.
    const first = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'busy-pool', message: 'hello' });
    expect(first.status).toBe(201);
    expect(first.body.data.status).toBe('started');

    const pool = t.services.hotPool;
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
    let refused = 0;
    (pool as unknown as { query: unknown }).query = (config: { name?: string }, ...rest: unknown[]) => {
      if (config?.name !== 'execution-slot-holders') return query(config, ...rest);
      refused++;
      return Promise.reject(new Error('timeout exceeded when trying to connect'));
    };
    try {
      const second = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'busy-pool', message: 'hello again' });
      expect(second.status).toBe(201);
      expect(second.body.data).toMatchObject({
        status: 'skipped',
        executions: [{ id: null, workflow_id: workflowId, action: 'skipped', reason: 'already_running' }],
      });
      // Tried again before answering without it.
      expect(refused).toBe(4);
    } finally {
      (pool as unknown as { query: unknown }).query = query;
    }
    const messages = await t.query<{ message: string }>(
      "select text as message from messages where direction = 'inbound' and customer_id = ? order by created_at",
      [first.body.data.customer_id],
    );
    expect(messages.map((m) => m.message)).toEqual(['hello', 'hello again']);
  });
  it('a fire whose start stamp fails after the commit is answered 201, recorded once, and runs', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Fired',
      channel: 'whatsapp',
      configuration: { nodes: [{ id: 'hi', type: 'message', content: 'Fired' }] },
    });
    const trigger = await t.request.post('/v1/triggers').set(bearer(key)).send({ name: 'Fire me', type: 'api', workflow_id: workflowId, configuration: {} });
    expect(trigger.status).toBe(201);

    // Every unit of work forked from now on refuses the start's stamp, as a busy pool would.
    const orm = t.services.orm;
    const fork = orm.em.fork.bind(orm.em);
    let refused = 0;
    orm.em.fork = ((...args: Parameters<typeof fork>) => {
      const em = fork(...args);
      const execute = em.execute.bind(em) as (...a: unknown[]) => unknown;
      em.execute = (async (sql: unknown, ...rest: unknown[]) => {
        if (typeof sql === 'string' && sql.includes('set temporal_started_at = now()')) {
          refused++;
          throw new Error('timeout exceeded when trying to connect');
        }
        return execute(sql, ...rest);
      }) as typeof em.execute;
      return em;
    }) as typeof orm.em.fork;
    let fired;
    try {
      fired = await t.request.post(`/v1/triggers/${trigger.body.data.id}/fire`).set(bearer(key)).send({ order: 'A-1' });
    } finally {
      orm.em.fork = fork;
    }
    expect(refused).toBe(1);
    expect(fired.status).toBe(201);
    const firings = await t.query<{ execution_id: string }>('select execution_id from trigger_executions where trigger_id = ?', [trigger.body.data.id]);
    expect(firings).toHaveLength(1);

    // Started on Temporal before the stamp failed: a worker runs it to the end.
    const worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    try {
      await waitForExecution(t, key, workflowId, firings[0]!.execution_id, 'success');
    } finally {
      await worker.stop();
    }
  });

  it('an idempotent request whose answer cannot be stored is answered all the same', async () => {
    const store = t.services.idempotency;
    const complete = store.complete.bind(store);
    let refused = 0;
    store.complete = async () => {
      refused++;
      throw new Error('timeout exceeded when trying to connect');
    };
    let posted;
    try {
      posted = await t.request
        .post('/v1/messages')
        .set(bearer(key))
        .set('Idempotency-Key', 'store-fails-1')
        .send({ channel: 'whatsapp', customer_id: 'store-fails', message: 'no trigger matches this' });
    } finally {
      store.complete = complete;
    }
    expect(refused).toBe(1);
    expect(posted.status).toBe(201);
    expect(posted.body.data).toMatchObject({ status: 'no_match', customer_id: expect.any(String) });
    const messages = await t.query("select id from messages where direction = 'inbound' and customer_id = ?", [posted.body.data.customer_id]);
    expect(messages).toHaveLength(1);
  });
});
