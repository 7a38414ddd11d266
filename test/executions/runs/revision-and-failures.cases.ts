/**
 * What an execution in flight does when the world changes under it: its workflow is edited
 * (it finishes on the revision it started with), PostgreSQL stays away longer than
 * ACTIVITY_INFRA_RETRY_HOURS (it fails with `timeout` once the database is back), and
 * Redis drops in the middle of a run (nothing in Redis is needed: it succeeds).
 *
 * PostgreSQL and Redis are the real servers behind loopback TCP proxies the test cuts and
 * restores; the infrastructure budget is a fraction of an hour (the setting takes
 * fractions) so that running out of it takes seconds.
 */
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp, uniqueSuffix } from '../../helpers/app';
import { releaseTestDatabase } from '../../helpers/test-databases';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

/** 0.0005 h = 1.8 s of outage before a node activity gives up. */
const INFRA_RETRY_HOURS = 0.0005;
const INFRA_RETRY_MS = INFRA_RETRY_HOURS * 3_600_000;

describe('executions in flight', () => {
  let pg: TcpProxy;
  let redis: TcpProxy;
  let provider: ChannelProvider;
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  const databaseName = `wfa_test_${uniqueSuffix()}`.toLowerCase();

  beforeAll(async () => {
    pg = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
    redis = await startTcpProxy({ host: '127.0.0.1', port: 6379 });
    provider = await startChannelProvider();
    t = await createTestApp({
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${pg.port}/${databaseName}`,
      REDIS_URL: `redis://127.0.0.1:${redis.port}`,
      CHANNEL_PROVIDER_URL: provider.url,
      ACTIVITY_INFRA_RETRY_HOURS: String(INFRA_RETRY_HOURS),
    });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await pg.restore().catch(() => undefined);
    await redis.restore().catch(() => undefined);
    await worker.stop();
    await t.close();
    await releaseTestDatabase(`postgresql://postgres@127.0.0.1:5432/${databaseName}`);
    await Promise.all([pg.close(), redis.close(), provider.close()]);
  });

  const send = (body: Record<string, unknown>) => t.request.post('/v1/messages').set(bearer(key)).send(body);
  const execution = (workflowId: string, id: string) => t.request.get(`/v1/workflows/${workflowId}/executions/${id}`).set(bearer(key));

  it('a running execution finishes on the revision it started with after a PUT; new executions run the new one', async () => {
    const configuration = (thanks: string) => ({
      trigger: { type: 'keyword', keywords: ['quote'] },
      nodes: [
        { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'thanks' },
        { id: 'thanks', type: 'message', content: thanks },
      ],
    });
    const workflowId = await createActiveWorkflow(t, key, { name: 'Edited', channel: 'instagram', configuration: configuration('Thanks (first revision).') });
    const started = await send({ channel: 'instagram', customer_id: 'rev-1', message: 'a quote please' });
    const first = started.body.data.executions[0].id as string;
    await waitForExecution(t, key, workflowId, first, (d) => d.output?.next_action === 'wait_for_input');

    const put = await t.request.put(`/v1/workflows/${workflowId}`).set(bearer(key)).send({ configuration: configuration('Thanks (second revision).') });
    expect(put.status).toBe(200);
    expect(await t.query('select revision from workflows where id = ?', [workflowId])).toEqual([{ revision: 2 }]);

    const reply = await send({ channel: 'instagram', customer_id: 'rev-1', message: 'ada@example.com' });
    expect(reply.body.data.executions).toEqual([expect.objectContaining({ id: first, action: 'resumed' })]);
    const done = await waitForExecution(t, key, workflowId, first, 'success');
    expect(done.revision).toBe(1);
    expect(done.steps.map((s: { node_id: string; output: unknown }) => [s.node_id, s.output])).toEqual([
      ['ask', { form_data: { email: 'ada@example.com' } }],
      ['thanks', { message_sent: 'Thanks (first revision).' }],
    ]);
    expect(provider.sent.map((r) => r.text)).toContain('Thanks (first revision).');

    const next = await send({ channel: 'instagram', customer_id: 'rev-2', message: 'a quote please' });
    const second = next.body.data.executions[0].id as string;
    await waitForExecution(t, key, workflowId, second, (d) => d.output?.next_action === 'wait_for_input');
    await send({ channel: 'instagram', customer_id: 'rev-2', message: 'bob@example.com' });
    const done2 = await waitForExecution(t, key, workflowId, second, 'success');
    expect(done2.revision).toBe(2);
    expect(done2.steps[1].output).toEqual({ message_sent: 'Thanks (second revision).' });
  });

  it('PostgreSQL away longer than ACTIVITY_INFRA_RETRY_HOURS: the execution fails with timeout once the database is back', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Outlasted',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['outlast'] }, nodes: [{ id: 'only', type: 'message', content: 'outlasted text' }] },
    });
    const release = provider.holdText('outlasted text');
    const res = await send({ channel: 'whatsapp', customer_id: 'pg-long', message: 'outlast' });
    expect(res.status).toBe(201);
    const id = res.body.data.executions[0].id as string;
    // The node is inside its send when the database goes away: it cannot record it.
    await waitFor(async () => provider.arrived.includes('outlasted text'), 'the send');
    await pg.cut();
    release();

    const failedAttempts = async () => {
      const metrics = await t.request.get('/metrics');
      return Number(/activity_dependency_failed_attempts_total\{dependency="postgres"\} (\d+)/.exec(metrics.text)?.[1] ?? 0);
    };
    await waitFor(async () => (await failedAttempts()) > 0, 'a node attempt failing on postgres');
    // Every node attempt from here on is past the budget (counted from the node's first
    // scheduling, before this point) and gives up instead of counting as a retried attempt;
    // an attempt counted after that is the completion's, which waits for the database.
    const pastBudget = Date.now() + INFRA_RETRY_MS;
    await waitFor(async () => Date.now() > pastBudget, 'the budget to pass', INFRA_RETRY_MS + 5_000);
    const before = await failedAttempts();
    await waitFor(async () => (await failedAttempts()) > before, 'the completion to wait for the database');

    await pg.restore();
    const failed = await waitForExecution(t, key, workflowId, id, 'failed');
    expect(failed.error).toEqual({ type: 'timeout', message: expect.stringMatching(/postgres unavailable for \d+ s/) });
    expect(failed.steps).toEqual([expect.objectContaining({ node_id: 'only', status: 'failed' })]);
    // Sent once (the provider has it under the step's key); no retry reached the provider.
    expect(provider.sent.filter((r) => r.text === 'outlasted text').map((r) => r.idempotencyKey)).toEqual([`${id}:only`]);
  });

  it('Redis dropping in the middle of a run: the execution succeeds, the API keeps answering with rate-limit headers', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Redisless',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['redis'] },
        nodes: [
          { id: 'a', type: 'message', content: 'redis first', next: 'b' },
          { id: 'b', type: 'message', content: 'redis second' },
        ],
      },
    });
    const release = provider.holdText('redis first');
    const res = await send({ channel: 'whatsapp', customer_id: 'redis-1', message: 'redis please' });
    const id = res.body.data.executions[0].id as string;
    await waitFor(async () => provider.arrived.includes('redis first'), 'the first send');
    await redis.cut();
    try {
      release();
      const done = await waitForExecution(t, key, workflowId, id, 'success');
      expect(done.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([
        ['a', 'completed'],
        ['b', 'completed'],
      ]);
      const outbound = await t.query<{ text: string }>("select text from messages where execution_id = ? and direction = 'outbound' order by created_at", [id]);
      expect(outbound.map((m) => m.text)).toEqual(['redis first', 'redis second']);

      // Meanwhile the API counts rate limits in memory and says Redis is missing.
      const during = await send({ channel: 'whatsapp', customer_id: 'redis-2', message: 'redis again' });
      expect(during.status).toBe(201);
      expect(during.headers['x-ratelimit-limit']).toEqual(expect.any(String));
      expect(during.headers['x-ratelimit-remaining']).toEqual(expect.any(String));
      await waitForExecution(t, key, workflowId, during.body.data.executions[0].id, 'success');
      await waitFor(async () => {
        const ready = await t.request.get('/readyz');
        return ready.status === 503 && ready.body.checks.redis === 'unavailable';
      }, '/readyz to name redis');
    } finally {
      await redis.restore();
    }
    await waitFor(async () => (await t.request.get('/readyz')).body.checks?.redis === 'ok', 'redis to be back');
    expect((await execution(workflowId, id)).body.data.status).toBe('success');
  });
});
