/**
 * `npm run bench -- exports [--rows N] [--rounds R]` (defaults 1 000 000 and 3): N executions
 * exported to CSV through the API (POST /v1/analytics/export → Temporal workflow in a separate
 * worker process → `COPY … TO STDOUT` → local file storage → status `completed`, polled every
 * 100 ms) against `psql -c "\copy (the same query) to file csv header"` on the same data.
 * After an uncounted warm-up of each side, R rounds, the order alternating; each round checks
 * that our file is byte for byte psql's. Prints both sides' seconds (median and range), where
 * each of our exports spent its time (from its Temporal history), the worker's peak RSS
 * growth (from /proc, sampled every 50 ms) and `ratio=ours/psql` (rows/s; the median of the
 * rounds' ratios) last.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import { temporal as proto } from '@temporalio/proto';
import { createApiServices, createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { exportRowsQuery } from '../src/modules/exports/export.sources';
import { generateSecretsKey } from '../src/secrets';
import { closeServices, createServices } from '../src/services';
import { exportWorkflowId } from '../temporal/reports.shared';
import { spawnService } from '../test/helpers/process';
import { benchDatabase, benchTemporal, formatStats, historyEventMs, log, machineLine, positiveIntArg, processCpuMs, roundStats } from './lib';

const run$ = promisify(execFile);

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const EventType = proto.api.enums.v1.EventType;

export async function run(args: string[]): Promise<void> {
  const rows = positiveIntArg(args, 'rows', 1_000_000);
  const rounds = positiveIntArg(args, 'rounds', 3);
  const db = await benchDatabase();
  const temporal = await benchTemporal();
  const files = mkdtempSync(path.join(os.tmpdir(), 'wfa-bench-exports-'));
  const env = {
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: `bench-exports-${randomBytes(4).toString('hex')}`,
    REDIS_KEY_PREFIX: `wfa-bench:${randomBytes(4).toString('hex')}:`,
    FILE_STORAGE_DIR: files,
    SECRETS_ENCRYPTION_KEY: process.env.SECRETS_ENCRYPTION_KEY ?? generateSecretsKey(),
    LOG_LEVEL: 'warn',
  };
  const config = loadConfig({ ...process.env, ...env, LOG_LEVEL: 'silent' });
  const orm = await createOrm(entities, config.DATABASE_URL, config.DATABASE_POOL_MAX);
  await migrate(orm);
  const services = await createServices(config, { orm });
  const { app } = createApp(await createApiServices(services));
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', r));
  const api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // spawnService reads the database, Redis prefix and queue from a TestApp-like object.
  const worker = spawnService('worker', { databaseUrl: db.url, config } as Parameters<typeof spawnService>[1], {
    FILE_STORAGE_DIR: files,
    SECRETS_ENCRYPTION_KEY: env.SECRETS_ENCRYPTION_KEY,
  });
  try {
    const keys = new ApiKeyService(orm.em.fork() as EntityManager);
    const org = (await keys.ensureOrganization(`bench-${randomBytes(3).toString('hex')}`)).id;
    const { key } = await keys.create(org, 'bench', 'admin');
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const wf = await fetch(`${api}/v1/workflows`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'bench', channel: 'whatsapp', configuration: { nodes: [{ id: 'a', type: 'message', content: 'x' }] } }),
    }).then(async (r) => ((await r.json()) as { data: { id: string } }).data.id);

    log(`seeding ${rows} executions ...`);
    const conn = orm.em.getConnection();
    // Row triggers off while seeding, as the analytics benchmark seeds: the deferred counter
    // and rollup triggers would update the workflow's counter row and its rollup rows a million
    // times in one transaction, each update slower than the last as the rows' versions pile
    // up: the seed ran for over 20 minutes. The export reads the executions themselves, which
    // need neither.
    await conn.getKnex().transaction(async (trx) => {
      await trx.raw('set local session_replication_role = replica');
      await trx.raw(
        `insert into executions (id, organization_id, workflow_id, revision, channel, status, started_at, completed_at, duration_ms, error_type, error_message)
         select 'exec_b' || lpad(g::text, 9, '0'), ?, ?, 1, 'whatsapp', case when g % 10 = 0 then 'failed' else 'success' end,
                now() - g * interval '1 second', now() - g * interval '1 second' + interval '250 milliseconds', 250,
                case when g % 10 = 0 then 'timeout' end, case when g % 10 = 0 then 'no reply, "timed out"' end
           from generate_series(1, ?) g`,
        [org, wf, rows],
      );
    });
    await conn.execute('analyze executions');

    await worker.waitForLine(/worker running/, 120_000);
    const pid = worker.child.pid!;
    const baseline = rssKb(pid);
    let peak = baseline;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssKb(pid));
      } catch {
        // exited
      }
    }, 50);

    /** One export through the API: seconds from POST to the poll that sees `completed`, the file, and where the time went. */
    const ours = async () => {
      const cpuBefore = processCpuMs(pid);
      const started = performance.timeOrigin + performance.now();
      const created = (await fetch(`${api}/v1/analytics/export`, { method: 'POST', headers, body: JSON.stringify({ data_type: 'executions', format: 'csv' }) }).then((r) =>
        r.json(),
      )) as { data: { export_id: string } };
      const answered = performance.timeOrigin + performance.now();
      let status = 'processing';
      let written = 0;
      while (status === 'processing') {
        await sleep(100);
        const res = await fetch(`${api}/v1/analytics/export/${created.data.export_id}`, { headers });
        if (!res.ok) throw new Error(`GET export: ${res.status} ${await res.text()}`);
        const s = (await res.json()) as { data: { status: string; progress: { rows_written: number } } };
        status = s.data.status;
        written = s.data.progress.rows_written;
      }
      const seen = performance.timeOrigin + performance.now();
      if (status !== 'completed' || written !== rows) throw new Error(`export ended ${status} with ${written} rows`);
      const workerCpuMs = processCpuMs(pid) - cpuBefore;
      // The stages from the workflow's history (the server's clock, this machine's). The record
      // completes before its workflow does: the history is whole once the workflow is.
      const handle = services.temporal.client.workflow.getHandle(exportWorkflowId(created.data.export_id));
      await handle.result();
      const history = await handle.fetchHistory();
      const events = history.events ?? [];
      const at = (type: number, nth = 0) => historyEventMs(events.filter((e) => e.eventType === type)[nth]!)!;
      const activities = events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name!);
      const generation = activities.indexOf('generateExportFile');
      const stages = {
        post: answered - started,
        startedWorkflow: at(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) - started,
        generationStarted: at(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, generation) - started,
        generationCompleted: at(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, generation) - started,
        workflowCompleted: at(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED) - started,
        seen: seen - started,
      };
      return { seconds: (seen - started) / 1000, file: path.join(files, 'exports', org, `${created.data.export_id}.csv`), stages, workerCpuMs };
    };

    // The baseline: the same query (same columns, formatting, filter and order) through psql's \copy.
    const q = exportRowsQuery('executions', org, {});
    const sql = q.text.replace('$1', `'${org}'`);
    const psql = async (i: number) => {
      const out = path.join(files, `psql-${i}.csv`);
      const started = performance.now();
      await run$('psql', [db.url, '-q', '-c', `\\copy (${sql}) to '${out}' csv header`], { maxBuffer: 1 << 20 });
      return { seconds: (performance.now() - started) / 1000, file: out };
    };

    log(machineLine());
    const warm = { ours: await ours(), psql: await psql(-1) };
    log(`warm-up (not counted): ours ${warm.ours.seconds.toFixed(2)} s, psql ${warm.psql.seconds.toFixed(2)} s`);
    rmSync(warm.ours.file);
    rmSync(warm.psql.file);

    const oursSeconds: number[] = [];
    const psqlSeconds: number[] = [];
    const ratios: number[] = [];
    const workerCpu: number[] = [];
    for (let i = 0; i < rounds; i++) {
      // Alternating order: neither side always runs on a cache the other just warmed.
      let o: Awaited<ReturnType<typeof ours>>;
      let p: Awaited<ReturnType<typeof psql>>;
      if (i % 2 === 0) {
        o = await ours();
        p = await psql(i);
      } else {
        p = await psql(i);
        o = await ours();
      }
      const size = statSync(o.file).size;
      const same = await run$('cmp', ['-s', o.file, p.file]).then(
        () => true,
        () => false,
      );
      if (!same) throw new Error(`round ${i + 1}: our file (${size} bytes) differs from psql's (${statSync(p.file).size} bytes)`);
      rmSync(o.file);
      rmSync(p.file);
      oursSeconds.push(o.seconds);
      workerCpu.push(o.workerCpuMs);
      psqlSeconds.push(p.seconds);
      ratios.push(p.seconds / o.seconds);
      const s = o.stages;
      log(
        `round ${i + 1} (${i % 2 === 0 ? 'ours first' : 'psql first'}): ours ${o.seconds.toFixed(2)} s (worker CPU ${o.workerCpuMs.toFixed(0)} ms), psql ${p.seconds.toFixed(2)} s, files identical (${size} bytes); ours in ms from POST: ` +
          `answered ${s.post.toFixed(0)}, workflow started ${s.startedWorkflow.toFixed(0)}, generation started ${s.generationStarted.toFixed(0)}, ` +
          `generation completed ${s.generationCompleted.toFixed(0)}, workflow completed ${s.workflowCompleted.toFixed(0)}, poll saw completed ${s.seen.toFixed(0)}`,
      );
    }
    clearInterval(sampler);

    const o = roundStats(oursSeconds);
    const p = roundStats(psqlSeconds);
    log(machineLine());
    log(`rows=${rows}, ${rounds} rounds`);
    log(`ours (POST to completed): ${formatStats(o, 's', 2)}, ${Math.round(rows / o.median)} rows/s`);
    log(`psql \\copy: ${formatStats(p, 's', 2)}, ${Math.round(rows / p.median)} rows/s`);
    log(`worker CPU per export (all its threads, user + system): ${formatStats(roundStats(workerCpu), 'ms')}`);
    log(`worker RSS: before ${Math.round(baseline / 1024)} MB, peak ${Math.round(peak / 1024)} MB, growth ${Math.round((peak - baseline) / 1024)} MB (limit 150 MB)`);
    log(`ratio per round: ${formatStats(roundStats(ratios), '', 2)}`);
    log(`ratio=${roundStats(ratios).median.toFixed(2)}`);
  } finally {
    await worker.kill('SIGTERM');
    await new Promise<void>((r) => server.close(() => r()));
    await closeServices(services);
    await temporal.stop();
    await db.drop();
    rmSync(files, { recursive: true, force: true });
  }
}

