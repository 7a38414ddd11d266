/**
 * What a replicated run found about confirming executions' Temporal starts:
 * 1. A start cut off at TEMPORAL_CALL_TIMEOUT_MS (a hung Temporal connection) is logged, as a
 *    warning naming the execution, not left silent until the reconciler starts it.
 * 2. An execution whose run finishes before its start was confirmed (the API's start cut
 *    off after Temporal created the run, or the batched stamp lost with a SIGKILLed API)
 *    still gets `temporal_started_at`: the reconciler only looks at running executions, so
 *    the run's finish stamps it.
 */
import { Writable } from 'node:stream';
import { createActivities } from '../../../temporal/activities';
import { createLogger } from '../../../src/logger';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

describe('confirming Temporal starts', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let workflowId: string;

  beforeAll(async () => {
    t = await createTestApp();
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
    workflowId = await createActiveWorkflow(t, key, {
      name: 'Confirmed starts',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['join'] },
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'name', type: 'text', required: true, label: 'Your name?' }], next: 'bye' },
          { id: 'bye', type: 'message', content: 'Welcome!' },
        ],
      },
    });
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
  });

  it('logs a start cut off at its timeout, with the execution id and no secret', async () => {
    const [host, port] = t.config.TEMPORAL_ADDRESS_EFFECTIVE.split(':');
    const proxy: TcpProxy = await startTcpProxy({ host: host!, port: Number(port) });
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const api = await createTestApp(
      { DATABASE_URL: t.databaseUrl, TEMPORAL_ADDRESS: `127.0.0.1:${proxy.port}`, TEMPORAL_CALL_TIMEOUT_MS: '300' },
      { logger: createLogger('info', sink) },
    );
    try {
      // Temporal hangs: connections are accepted and never answered.
      await proxy.stall();
      const res = await api.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'cut-off', message: 'join' });
      expect(res.status).toBe(201);
      const executionId = res.body.data.executions[0].id as string;
      const line = await waitFor(
        async () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'Temporal call cut off at its timeout; left to the reconciler'),
        'the cut-off start to be logged',
      );
      expect(line).toMatchObject({ level: 40, execution_id: executionId, timeout_ms: 300 });
      expect(lines.join('\n')).not.toContain(key);
      expect(await t.query('select temporal_started_at from executions where id = ?', [executionId])).toEqual([{ temporal_started_at: null }]);
    } finally {
      await api.close();
      await proxy.close();
    }
  });

  it('stamps temporal_started_at when a run whose start was never confirmed finishes', async () => {
    const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'stamp-lost', message: 'join' });
    const executionId = res.body.data.executions[0].id as string;
    await waitForExecution(t, key, workflowId, executionId, (d) => d.output?.next_action === 'wait_for_input');
    // The run is going; its start's stamp is lost (the API SIGKILLed inside the stamp's batch window).
    await waitFor(async () => (await t.query<{ s: Date | null }>('select temporal_started_at as s from executions where id = ?', [executionId]))[0]?.s, 'the batched stamp');
    await t.query('update executions set temporal_started_at = null where id = ?', [executionId]);

    await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: 'stamp-lost', message: 'Ada' }).expect(201);
    await waitForExecution(t, key, workflowId, executionId, 'success');
    expect(
      await t.query('select temporal_started_at is not null as stamped, temporal_started_at >= started_at as after_recording from executions where id = ?', [executionId]),
    ).toEqual([{ stamped: true, after_recording: true }]);
  });
});
