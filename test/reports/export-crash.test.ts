/**
 * A worker process SIGKILLed in the middle of writing an export file (at a failpoint once
 * 2000 rows are written): once a worker is back, the export completes with one whole file holding every
 * row exactly once, in order, and nothing partial is ever served.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { type SpawnedProcess, spawnService } from '../helpers/process';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { createWorkflow, download, pathOf, seedExecutions, waitForStatus } from './helpers';

jest.setTimeout(240_000);

describe('export crash safety', () => {
  let t: TestApp;
  let dir: string;
  const children: SpawnedProcess[] = [];
  let second: TestWorker | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wfa-export-crash-'));
    t = await createTestApp({ FILE_STORAGE_DIR: dir });
  });
  afterAll(async () => {
    for (const c of children.splice(0)) await c.kill('SIGKILL');
    await second?.stop();
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a worker killed mid-file: the retry writes one complete, correct file', async () => {
    const { key, organizationId } = await t.createKey('admin');
    const wf = await createWorkflow(t, key, 'Crash export');
    await seedExecutions(t, organizationId, wf, 20_000, new Date('2026-11-20T00:00:00Z'));

    const first = spawnService('worker', t, { FILE_STORAGE_DIR: dir, FAILPOINTS: 'export.mid_file' });
    children.push(first);
    await first.waitForLine(/worker running/, 90_000);
    const res = await t.request.post('/v1/analytics/export').set(bearer(key)).send({ data_type: 'executions', format: 'csv' });
    expect(res.status).toBe(201);
    const id = res.body.data.export_id as string;
    await first.waitForLine(/failpoint export.mid_file: SIGKILL/, 90_000);
    await first.exited;

    // Nothing is served while no attempt finished.
    const early = await t.request.get(`/v1/analytics/export/${id}/download`).set(bearer(key));
    expect([early.status, early.body.error.code]).toEqual([409, 'EXPORT_NOT_READY']);

    // The worker that comes back is not crashed: it runs in-process, on the same file storage.
    second = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    const done = await waitForStatus(t, key, `/v1/analytics/export/${id}`, 'completed', 150_000);
    expect(done.progress).toEqual({ rows_written: 20_000, rows_total: 20_000, percent: 100 });

    const rows = parse((await download(t, key, pathOf(done.download_url))).body, { columns: true }) as Array<Record<string, string>>;
    const expected = await t.query<{ id: string }>('select id from executions where workflow_id = ? order by started_at, id', [wf]);
    expect(rows.length).toBe(20_000);
    expect(new Set(rows.map((r) => r.id)).size).toBe(20_000);
    expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
    // One completion event, however many attempts ran.
    expect(await t.query(`select id from events where type = 'export.completed' and data->>'export_id' = ?`, [id])).toHaveLength(1);
  });
});
