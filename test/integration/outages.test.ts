/**
 * Dependency outages delay conversations but never fail them. PostgreSQL and Temporal are
 * the real servers, reached through a loopback TCP proxy the test cuts and restores (the
 * servers keep running for the other test files). The channel provider is a fake HTTP
 * server that holds its answers until the test releases them, so executions are in flight
 * exactly when the database goes away.
 *
 * The timing figures of the issue (answers within 100 ms) are measured by `npm run chaos`
 * against private servers; this file asserts behaviour only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp, uniqueSuffix } from '../helpers/app';
import { releaseTestDatabase } from '../helpers/test-databases';
import { type ChannelProvider, startChannelProvider } from '../helpers/channel-provider';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { connectTestClient, startTestWorker, temporalAddress, type TestWorker } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { reconcileOnce } from '../../src/reconciler';
import { createActiveWorkflow } from '../executions/helpers';

describe('dependency outages', () => {
  let pg: TcpProxy;
  let temporal: TcpProxy;
  let provider: ChannelProvider;
  /** Lets the held sends be answered (a no-op until the test holds them). */
  let release: () => void = () => undefined;
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let workflowId: string;
  let files: string;
  const databaseName = `wfa_test_${uniqueSuffix()}`.toLowerCase();

  beforeAll(async () => {
    files = await mkdtemp(path.join(tmpdir(), 'wfa-outages-'));
    pg = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
    const [host, port] = temporalAddress().split(':');
    temporal = await startTcpProxy({ host: host!, port: Number(port) });
    provider = await startChannelProvider();
    t = await createTestApp({
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${pg.port}/${databaseName}`,
      // Only the API's client (and the reconciler) go through the proxy; the worker polls Temporal directly.
      TEMPORAL_ADDRESS: `127.0.0.1:${temporal.port}`,
      CHANNEL_PROVIDER_URL: provider.url,
      CHANNEL_PROVIDER_TIMEOUT_MS: '60000',
      FILE_STORAGE_DIR: files,
      // Reconciled only when this test asks (reconcileOnce), never behind its back.
      EXECUTION_RECONCILE_GRACE_MS: '0',
    });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
    workflowId = await createActiveWorkflow(t, key, {
      name: 'Outage',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['hello'] },
        nodes: [
          { id: 'a', type: 'message', content: 'first', next: 'b' },
          { id: 'b', type: 'message', content: 'second' },
        ],
      },
    });
  });
  afterAll(async () => {
    release();
    await pg.restore().catch(() => undefined);
    await temporal.restore().catch(() => undefined);
    await worker.stop();
    await t.close();
    await releaseTestDatabase(`postgresql://postgres@127.0.0.1:5432/${databaseName}`);
    await Promise.all([pg.close(), temporal.close(), provider.close(), rm(files, { recursive: true, force: true })]);
  });

  const send = (body: Record<string, unknown>) => t.request.post('/v1/messages').set(bearer(key)).send(body);

  /**
   * Waits for each execution to succeed, running a reconciler pass each round: a start or a
   * reply signal that was skipped (Temporal known down) or cut off at its timeout on a
   * loaded machine is finished by the reconciler, as the worker's does every few seconds.
   */
  const succeeded = async (executionIds: string[]) => {
    for (const id of executionIds) {
      await waitFor(
        async () => {
          await reconcileOnce(t.services, 0);
          const [row] = await t.query<{ status: string }>('select status from executions where id = ?', [id]);
          return row?.status === 'success';
        },
        `execution ${id} to succeed`,
        60_000,
      );
    }
  };

  const stepsOnce = async (executionIds: string[]) => {
    const rows = await t.query<{ execution_id: string; node_id: string; n: number }>(
      'select execution_id, node_id, count(*)::int as n from execution_steps where execution_id in (?) group by 1, 2 order by 1, 2',
      [executionIds],
    );
    expect(rows).toHaveLength(executionIds.length * 2);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const sent = await t.query<{ n: number }>(
      "select count(*)::int as n from messages where direction = 'outbound' and execution_id in (?)",
      [executionIds],
    );
    expect(sent[0]!.n).toBe(executionIds.length * 2);
  };

  it('a PostgreSQL outage longer than the provider budget: 503s meanwhile, then every execution succeeds, each step once', async () => {
    release = provider.holdAll();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await send({ channel: 'whatsapp', customer_id: `pg-${i}`, message: 'hello' });
      expect(res.status).toBe(201);
      ids.push(res.body.data.executions[0].id);
    }
    // Local activities' attempts are not in Temporal's pending activities: the attempts
    // counter shows them (read through the API, which stays up).
    const failedAttempts = async () => {
      const metrics = await t.request.get('/metrics');
      return Number(/activity_dependency_failed_attempts_total\{dependency="postgres"\} (\d+)/.exec(metrics.text)?.[1] ?? 0);
    };
    const before = await failedAttempts();
    // Every execution is inside its first node's send when the database goes away.
    await waitFor(async () => provider.keys.length >= 3, 'the three first sends');
    await pg.cut();
    release();

    // The API: 503 with Retry-After and the envelope, and /readyz names the dependency.
    const refused = await send({ channel: 'whatsapp', customer_id: 'pg-refused', message: 'hello' });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.body).toEqual({ error: { code: 'SERVICE_UNAVAILABLE', message: expect.any(String), retry_after: 5 } });
    const ready = await t.request.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.postgres).toBe('unavailable');

    // The worker: activities wait on postgres, visible in /metrics ...
    await waitFor(async () => {
      const metrics = await t.request.get('/metrics');
      const m = /activities_waiting_on_dependency\{dependency="postgres"\} (\d+)/.exec(metrics.text);
      return m && Number(m[1]) >= 1;
    }, 'the waiting gauge');
    // ... and keep retrying past the provider budget (5 attempts) without failing: more than
    // 3 × 5 failed attempts of the 3 nodes since the cut, so one of them failed a 6th time
    // and was retried where a provider's error would have been final. (Counted from before
    // the cut, not from the gauge's first sight of a wait: that left out the first attempts
    // and asked for 7 more of each, 10 s more of backoff for the same proof.)
    await waitFor(async () => (await failedAttempts()) - before > 3 * 5, 'attempts beyond the provider budget', 60_000);

    await pg.restore();
    await succeeded(ids);
    await stepsOnce(ids);
    const metrics = await t.request.get('/metrics');
    expect(metrics.text).toMatch(/activities_waiting_on_dependency\{dependency="postgres"\} 0/);
  });

  it('a Temporal outage: messages are accepted at once and their executions start when it is back', async () => {
    await temporal.cut();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await send({ channel: 'whatsapp', customer_id: `tmp-${i}`, message: 'hello' });
      expect(res.status).toBe(201);
      ids.push(res.body.data.executions[0].id);
    }
    const unstarted = await t.query<{ n: number }>('select count(*)::int as n from executions where id in (?) and temporal_started_at is null', [ids]);
    expect(unstarted[0]!.n).toBe(3);
    expect((await t.request.get('/readyz')).body.checks.temporal).toBe('unavailable');

    await temporal.restore();
    await succeeded(ids);
    await stepsOnce(ids);
  });

  it('a Temporal outage: exports, reports and replays are recorded at once and run when it is back', async () => {
    await temporal.cut();
    const exported = await t.request.post('/v1/analytics/export').set(bearer(key)).send({ data_type: 'executions', format: 'csv' });
    const report = await t.request.post('/v1/analytics/reports').set(bearer(key)).send({ name: 'During the outage', metrics: ['total_executions'] });
    const replay = await t.request
      .post('/v1/replays')
      .set(bearer(key))
      .send({ filter: { workflow_id: workflowId, status: 'failed' } });
    expect([exported.status, report.status, replay.status]).toEqual([201, 201, 201]);
    expect([exported.body.data.status, report.body.data.status, replay.body.data.status]).toEqual(['processing', 'generating', 'running']);
    const jobs: Array<[string, string, string]> = [
      ['exports', exported.body.data.export_id, `/v1/analytics/export/${exported.body.data.export_id}`],
      ['reports', report.body.data.report_id, `/v1/analytics/reports/${report.body.data.report_id}`],
      ['replays', replay.body.data.id, `/v1/replays/${replay.body.data.id}`],
    ];
    for (const [table, id] of jobs) {
      const [row] = await t.query<{ started: boolean }>(`select temporal_started_at is not null as started from ${table} where id = ?`, [id]);
      expect([table, row?.started]).toEqual([table, false]);
    }

    await temporal.restore();
    for (const [table, id, path] of jobs) {
      await waitFor(
        async () => {
          await reconcileOnce(t.services, 0);
          const res = await t.request.get(path).set(bearer(key));
          return res.body.data?.status === 'completed';
        },
        `${table} ${id} to complete`,
        60_000,
      );
    }
    // One run each, under the id derived from the record: the API's failed start and the reconciler's never ran a job twice.
    const client = await connectTestClient();
    try {
      const [exportId, reportId, replayId] = jobs.map(([, id]) => id);
      for (const workflowIdOfJob of [`export:${exportId}`, `report:${reportId}`, `replay:${replayId}`]) {
        const runs: string[] = [];
        for await (const run of client.client.workflow.list({ query: `WorkflowId = '${workflowIdOfJob}'` })) runs.push(run.runId);
        expect([workflowIdOfJob, runs.length]).toEqual([workflowIdOfJob, 1]);
      }
    } finally {
      await client.close();
    }
  });

  it('a redelivered provider message answers its first outcome and starts nothing', async () => {
    const body = { channel: 'whatsapp', customer_id: 'dup-1', message: 'hello', provider_message_id: 'wamid.1' };
    const first = await send(body);
    expect(first.status).toBe(201);
    const again = await send(body);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // The customer's conversation ends first: a workflow runs once at a time per customer.
    // The tests before this one cut Temporal: until this process sees it back, a start is
    // left to the reconciler (as in production, where it runs every few seconds).
    const [started] = first.body.data.executions;
    await succeeded([started.id]);
    // Concurrent redeliveries: still one message, one execution.
    const racing = await Promise.all([1, 2, 3].map(() => send({ ...body, provider_message_id: 'wamid.2' })));
    expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 201]);
    expect(new Set(racing.map((r) => JSON.stringify(r.body))).size).toBe(1);
    const rows = await t.query<{ n: number }>("select count(*)::int as n from messages where provider_message_id in ('wamid.1', 'wamid.2')");
    expect(rows[0]!.n).toBe(2);
    const execs = await t.query<{ n: number }>(
      "select count(*)::int as n from executions e join messages m on m.id = e.message_id where m.provider_message_id in ('wamid.1', 'wamid.2')",
    );
    expect(execs[0]!.n).toBe(2);
    // Redeliveries count nothing for the customer, nor announce anything. (Its count also
    // takes the runs' outbound messages, each written with its message row.)
    const [customer] = await t.query<{ counted: number; messages: number; received: number }>(
      `select c.message_count as counted, (select count(*)::int from messages where customer_id = c.id) as messages,
              (select count(*)::int from events where type = 'message.received' and data->>'customer_id' = c.id) as received
         from customers c where c.external_id = 'dup-1' and c.channel = 'whatsapp'`,
    );
    expect(customer!.counted).toBe(customer!.messages);
    expect(customer!.received).toBe(2);
    // The same id on another channel is another message.
    const other = await send({ ...body, channel: 'instagram' });
    expect(other.status).toBe(201);
    // An empty id is a client error.
    const empty = await send({ ...body, provider_message_id: ' ' });
    expect(empty.status).toBe(400);
    expect(empty.body.error.field).toBe('provider_message_id');
  });
});
