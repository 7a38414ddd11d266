/**
 * `npm run bench -- exports [--rows N]` (default 1 000 000): N executions exported to CSV
 * through the API (POST /v1/analytics/export → Temporal workflow in a separate worker
 * process → `COPY … TO STDOUT` → local file storage → status `completed`) against
 * `psql -c "\copy (the same query) to file csv header"` on the same data, in the same run.
 * Prints rows/s of both, the worker's peak RSS growth during the export (from /proc, sampled
 * every 50 ms) and `ratio=ours/psql` last.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import { createApiServices, createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createOrm, migrate } from '../src/db/orm';
import { entities } from '../src/entities';
import { ApiKeyService } from '../src/modules/api-keys/api-key.service';
import { exportRowsQuery } from '../src/modules/exports/export.sources';
import { generateSecretsKey } from '../src/secrets';
import { closeServices, createServices } from '../src/services';
import { spawnService } from '../test/helpers/process';
import { benchDatabase, benchTemporal, log } from './lib';

const run$ = promisify(execFile);

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(args: string[]): Promise<void> {
  const i = args.indexOf('--rows');
  const rows = i >= 0 ? Number(args[i + 1]) : 1_000_000;
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
  const worker = spawnService('worker', { databaseUrl: db.url, config } as Parameters<typeof spawnService>[1], { FILE_STORAGE_DIR: files, SECRETS_ENCRYPTION_KEY: env.SECRETS_ENCRYPTION_KEY });
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

    const started = performance.now();
    const created = (await fetch(`${api}/v1/analytics/export`, { method: 'POST', headers, body: JSON.stringify({ data_type: 'executions', format: 'csv' }) }).then((r) => r.json())) as {
      data: { export_id: string };
    };
    let status = 'processing';
    let written = 0;
    while (status === 'processing') {
      await sleep(100);
      const s = (await fetch(`${api}/v1/analytics/export/${created.data.export_id}`, { headers }).then((r) => r.json())) as { data: { status: string; progress: { rows_written: number } } };
      status = s.data.status;
      written = s.data.progress.rows_written;
    }
    const oursSeconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    if (status !== 'completed' || written !== rows) throw new Error(`export ended ${status} with ${written} rows`);
    const oursBytes = statSync(path.join(files, 'exports', org, `${created.data.export_id}.csv`)).size;

    // The baseline: the same query (same columns, formatting, filter and order) through psql's \copy.
    const q = exportRowsQuery('executions', org, {});
    const sql = q.text.replace('$1', `'${org}'`);
    const out = path.join(files, 'psql.csv');
    const psqlStart = performance.now();
    await run$('psql', [db.url, '-q', '-c', `\\copy (${sql}) to '${out}' csv header`], { maxBuffer: 1 << 20 });
    const psqlSeconds = (performance.now() - psqlStart) / 1000;
    const psqlBytes = statSync(out).size;

    const ours = rows / oursSeconds;
    const psql = rows / psqlSeconds;
    log(`rows=${rows} file: ours ${oursBytes} bytes, psql ${psqlBytes} bytes`);
    log(`ours: ${oursSeconds.toFixed(2)} s from POST to completed, ${Math.round(ours)} rows/s`);
    log(`psql \\copy: ${psqlSeconds.toFixed(2)} s, ${Math.round(psql)} rows/s`);
    log(`worker RSS: before ${Math.round(baseline / 1024)} MB, peak ${Math.round(peak / 1024)} MB, growth ${Math.round((peak - baseline) / 1024)} MB (limit 150 MB)`);
    log(`ratio=${(ours / psql).toFixed(2)}`);
  } finally {
    await worker.kill('SIGTERM');
    await new Promise<void>((r) => server.close(() => r()));
    await closeServices(services);
    await temporal.stop();
    await db.drop();
  }
}
