/**
 * A replay survives worker kills without starting any retry twice. Worker processes are
 * killed twice: once by a failpoint right after a retry started and before its outcome was
 * recorded (the worst moment), once by an outside SIGKILL inside a later batch activity (held
 * there by a row lock the test takes). The replay is created
 * with REPLAY_BATCHES_PER_RUN=2, so it also continues as new several times on the way.
 * After a last worker finishes it, every matched execution has exactly one retry.
 */
import { Client } from 'pg';
import { replayWorkflowId } from '../../temporal/replays.shared';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type SpawnedProcess, spawnService } from '../helpers/process';
import { waitFor } from '../helpers/wait';
import { cancelledExecutions, createFormWorkflow, retriesOf, waitForReplay } from './helpers';

jest.setTimeout(420_000);

describe('crash safety of replays', () => {
  let t: TestApp;
  let key: string;
  const children: SpawnedProcess[] = [];

  const spawnWorker = (extra: Record<string, string> = {}) => {
    const p = spawnService('worker', t, { EXECUTION_RECONCILE_INTERVAL_MS: '200', EXECUTION_RECONCILE_GRACE_MS: '0', ...extra });
    children.push(p);
    return p;
  };

  beforeAll(async () => {
    // The API (this process) creates the replay, so its batches-per-run setting applies.
    t = await createTestApp({ REPLAY_BATCHES_PER_RUN: '2' });
    key = (await t.createKey('admin')).key;
  });
  afterEach(async () => {
    for (const c of children.splice(0)) await c.kill('SIGKILL');
  });
  afterAll(async () => {
    await t.close();
  });

  it('worker SIGKILLs mid-replay: every matched execution ends with exactly one retry', async () => {
    const wf = await createFormWorkflow(t, key, 'zeta');
    const originals = await cancelledExecutions(t, key, wf, 'zeta', 12);
    const res = await t.request.post('/v1/replays').set(bearer(key)).send({ filter: { workflow_id: wf }, rate_per_second: 2 });
    expect(res.status).toBe(201);
    const id = res.body.data.id as string;
    expect(res.body.data.matched).toBe(12);

    // 1. Dies right after the first retry started, before the replay recorded it.
    const first = spawnWorker({ FAILPOINTS: 'replay.after_retry' });
    await first.exited;
    expect(first.lines.join('\n')).toContain('failpoint replay.after_retry: SIGKILL');
    const [unrecorded] = await t.query<{ n: number }>('select count(*)::int as n from executions where retry_of = any(?::text[])', [`{${originals.join(',')}}`]);
    expect(unrecorded!.n).toBe(1);
    expect((await t.request.get(`/v1/replays/${id}`).set(bearer(key))).body.data.started).toBe(0);

    // 2. Killed from outside once the replay is well under way, inside a batch activity: the
    // test holds the sixth original's row, so that retry's insert (its foreign key to the
    // original) waits inside the batch until the kill. Without that gate the kill would most
    // likely land between batches, where the workflow waits for its rate.
    const [sixth] = await t.query<{ id: string }>('select id from executions where id = any(?::text[]) order by started_at, id offset 5 limit 1', [
      `{${originals.join(',')}}`,
    ]);
    const gate = new Client({ connectionString: t.databaseUrl });
    await gate.connect();
    try {
      await gate.query('begin');
      await gate.query('select 1 from executions where id = $1 for update', [sixth!.id]);
      const gatePid = (await gate.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      const second = spawnWorker();
      // Asked on another connection: within the gate's transaction pg_stat_activity would
      // stay the snapshot of its first read.
      await waitFor(
        async () => (await t.query('select 1 from pg_stat_activity where ?::int = any(pg_blocking_pids(pid))', [gatePid])).length > 0,
        'a batch activity waiting for the held original',
        120_000,
      ).catch(async (err: Error) => {
        const state = (await t.request.get(`/v1/replays/${id}`).set(bearer(key))).body.data;
        const activity = await t.query(
          `select pid, state, wait_event_type, pg_blocking_pids(pid) as blockers, left(query, 160) as query from pg_stat_activity where datname = current_database()`,
        );
        throw new Error(`${err.message}; replay=${JSON.stringify(state)} activity=${JSON.stringify(activity)}\n${second.lines.slice(-20).join('\n')}`);
      });
      expect((await t.request.get(`/v1/replays/${id}`).set(bearer(key))).body.data.started).toBe(5);
      await second.kill('SIGKILL');
    } finally {
      await gate.query('rollback').catch(() => undefined);
      await gate.end();
    }

    // 3. A last worker finishes it.
    const third = spawnWorker({ LOG_LEVEL: 'info' });
    await third.waitForLine(/worker running/, 60_000);
    const done = await waitForReplay(t, key, id, (r) => r.status === 'completed', 'completed', 180_000).catch(async (err: Error) => {
      const state = (await t.request.get(`/v1/replays/${id}`).set(bearer(key))).body.data;
      const items = await t.query('select execution_id, outcome, retry_execution_id from replay_items where replay_id = ?', [id]);
      throw new Error(`${err.message}; replay=${JSON.stringify(state)} items=${JSON.stringify(items)}\n${third.lines.slice(-40).join('\n')}`);
    });
    expect(done).toMatchObject({ matched: 12, started: 12, skipped: 0, failed: 0 });
    expect(await retriesOf(t, originals)).toEqual(new Map(originals.map((o) => [o, 1])));
    // Nothing doubled around the retries either: one workflow.started event and one Temporal run each.
    const retries = await t.query<{ id: string }>('select id from executions where retry_of = any(?::text[])', [`{${originals.join(',')}}`]);
    for (const r of retries) {
      expect(await t.query(`select 1 from events where type = 'workflow.started' and data->>'execution_id' = ?`, [r.id])).toHaveLength(1);
      const runs: string[] = [];
      for await (const w of t.services.temporal.client.workflow.list({ query: `WorkflowId = '${r.id}'` })) runs.push(w.runId);
      expect(runs).toHaveLength(1);
    }
    const wfDetail = await t.request.get(`/v1/workflows/${wf}`).set(bearer(key));
    expect(wfDetail.body.data.execution_count).toBe(24);
    expect(await t.query(`select 1 from events where type = 'replay.completed' and data->>'replay_id' = ?`, [id])).toHaveLength(1);

    // Six batches of two at two batches per run: the replay continued as new on the way.
    const runs: string[] = [];
    for await (const w of t.services.temporal.client.workflow.list({ query: `WorkflowId = '${replayWorkflowId(id)}'` })) runs.push(w.runId);
    expect(runs.length).toBeGreaterThanOrEqual(3);
  });
});
