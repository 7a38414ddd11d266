/**
 * Data exports through HTTP, local file storage: every data type and format read back with
 * real parsers (csv-parse, JSON per line, exceljs), filters, progress, metadata, the
 * download headers, every error, scopes, idempotency, the outbox events and expiry by
 * the Temporal Schedule.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { ensureFileExpirySchedule } from '../../../src/modules/files/file-expiry.schedule';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createWorkflow, download, pathOf, seedExecutions, waitForStatus } from '../helpers';

const END = new Date('2026-11-20T12:00:00Z');
const N = 3000;

describe('data exports', () => {
  let t: TestApp;
  let worker: TestWorker;
  let dir: string;
  let key: string;
  let reader: string;
  let org: string;
  let wfA: string;
  let wfB: string;

  const create = (body: Record<string, unknown>, k = key) => t.request.post('/v1/analytics/export').set(bearer(k)).send(body);
  const completed = async (body: Record<string, unknown>) => {
    const res = await create(body);
    expect(res.status).toBe(201);
    return await waitForStatus(t, key, `/v1/analytics/export/${res.body.data.export_id}`, 'completed');
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wfa-exports-'));
    t = await createTestApp({ FILE_STORAGE_DIR: dir, PUBLIC_BASE_URL: 'https://api.example.test' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    const admin = await t.createKey('admin');
    key = admin.key;
    org = admin.organizationId;
    reader = (await t.createKey('read')).key;
    wfA = await createWorkflow(t, key, 'Export A');
    wfB = await createWorkflow(t, key, 'Export B', 'instagram');
    await seedExecutions(t, org, wfA, N, END);
    await seedExecutions(t, org, wfB, 50, END, 'instagram');
  });
  // The export limit (20/h) is per credential: each test uses a fresh key of the same organization.
  beforeEach(async () => {
    key = (await t.createKey('admin', org)).key;
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('CSV of executions: 201 record, progress to 100 %, a streamed file every CSV parser reads, equal to the database', async () => {
    const res = await create({ data_type: 'executions', format: 'csv', filters: { workflow_ids: [wfA] }, start_date: '2026-11-01', end_date: '2026-11-20' });
    expect(res.status).toBe(201);
    expect(res.headers['x-ratelimit-limit']).toBe('20');
    const id = res.body.data.export_id as string;
    expect(res.body.data).toMatchObject({
      export_id: expect.stringMatching(/^exp_/),
      status: 'processing',
      created_at: expect.any(String),
      estimated_completion: expect.any(String),
      download_url: `https://api.example.test/v1/analytics/export/${id}/download`,
    });
    const done = await waitForStatus(t, key, `/v1/analytics/export/${id}`, 'completed');
    expect(done).toMatchObject({ progress: { rows_written: N, rows_total: N, percent: 100 }, estimated_completion: null, error: null });
    expect(new Date(done.expires_at).getTime() - new Date(done.completed_at).getTime()).toBe(7 * 86_400_000);
    expect(done.metadata).toBeUndefined();

    const file = await download(t, reader, pathOf(done.download_url));
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(file.headers['content-disposition']).toMatch(new RegExp(`^attachment; filename="executions-\\d{4}-\\d{2}-\\d{2}-${id}\\.csv"$`));
    expect(Number(file.headers['content-length'])).toBe(file.body.length);
    expect(done.file_size).toBe(file.body.length);
    expect(file.headers['x-export-id']).toBeUndefined();
    const rows = parse(file.body, { columns: true }) as Array<Record<string, string>>;
    const expected = await t.query<{ id: string }>('select id from executions where workflow_id = ? order by started_at, id', [wfA]);
    expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
    expect(Object.keys(rows[0]!)).toEqual(['id', 'workflow_id', 'revision', 'trigger_id', 'customer_id', 'channel', 'status', 'started_at', 'completed_at', 'duration_ms', 'error_type', 'error_message', 'retry_of']);
    expect(rows[0]).toMatchObject({ workflow_id: wfA, status: expect.stringMatching(/^(success|failed)$/), trigger_id: '', started_at: expect.stringMatching(/^2026-11-\d\dT.*Z$/) });
  });

  it('a date range and channel filter select exactly the matching rows', async () => {
    const done = await completed({ data_type: 'executions', start_date: '2026-11-20T11:59:00Z', end_date: '2026-11-20T11:59:30Z', filters: { channels: ['whatsapp'] } });
    const rows = parse((await download(t, key, pathOf(done.download_url))).body, { columns: true }) as Array<Record<string, string>>;
    const expected = await t.query<{ id: string }>(
      `select id from executions where organization_id = ? and channel = 'whatsapp' and started_at >= '2026-11-20T11:59:00Z' and started_at < '2026-11-20T11:59:30Z' order by started_at, id`,
      [org],
    );
    expect(expected.length).toBe(30);
    expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
  });

  it('NDJSON with include_metadata: the file starts with one metadata line, then one object per row; the status record has the same metadata', async () => {
    const done = await completed({ data_type: 'messages', format: 'json', include_metadata: true, filters: { workflow_ids: [wfB] } });
    expect(done.metadata).toEqual({
      export_id: done.export_id,
      data_type: 'messages',
      format: 'json',
      filters: { filters: { workflow_ids: [wfB] } },
      generated_at: expect.any(String),
      row_count: 50,
    });
    // The data was read before the file was stored.
    expect(Date.parse(done.metadata.generated_at)).toBeLessThanOrEqual(Date.parse(done.completed_at));
    const file = await download(t, key, pathOf(done.download_url));
    expect(file.headers['content-type']).toBe('application/x-ndjson');
    expect(file.headers['content-disposition']).toMatch(/filename="messages-.*\.ndjson"/);
    expect(file.headers).toMatchObject({ 'x-export-id': done.export_id, 'x-export-row-count': '50', 'x-export-generated-at': done.metadata.generated_at });
    const [first, ...lines] = file.body.toString('utf8').trimEnd().split('\n').map((l: string) => JSON.parse(l) as Record<string, unknown>);
    expect(first).toEqual({ type: 'metadata', ...done.metadata });
    expect(lines).toHaveLength(50);
    expect(lines[0]).toMatchObject({ text: 'hi, "friend", 👋', workflow_id: wfB, direction: 'outbound', channel: 'instagram' });
    expect(lines.some((l: Record<string, unknown>) => 'type' in l)).toBe(false);

    // workflow_metrics too: the count comes first, and equals the lines after it.
    const metricsDone = await completed({ data_type: 'workflow_metrics', format: 'json', include_metadata: true, start_date: '2026-11-19', end_date: '2026-11-20' });
    const [meta, ...days] = (await download(t, key, pathOf(metricsDone.download_url))).body.toString('utf8').trimEnd().split('\n').map((l: string) => JSON.parse(l) as Record<string, unknown>);
    expect(meta).toEqual({ type: 'metadata', ...metricsDone.metadata });
    expect(days).toHaveLength(4); // two workflows × two days
    expect(meta!.row_count).toBe(4);

    // Without include_metadata: rows only.
    const plain = await completed({ data_type: 'messages', format: 'json', filters: { workflow_ids: [wfB] } });
    const plainLines = (await download(t, key, pathOf(plain.download_url))).body.toString('utf8').trimEnd().split('\n').map((l: string) => JSON.parse(l) as Record<string, unknown>);
    expect([plainLines.length, plain.metadata]).toEqual([50, undefined]);
  });

  it('CSV with include_metadata stays plain; its metadata is in the status record', async () => {
    const done = await completed({ data_type: 'steps', format: 'csv', include_metadata: true, filters: { workflow_ids: [wfB] } });
    expect(done.metadata).toEqual({ export_id: done.export_id, data_type: 'steps', format: 'csv', filters: { filters: { workflow_ids: [wfB] } }, generated_at: expect.any(String), row_count: 50 });
    const text = (await download(t, key, pathOf(done.download_url))).body.toString('utf8');
    expect(text.startsWith('id,execution_id,workflow_id,')).toBe(true);
    expect(parse(text, { columns: true })).toHaveLength(50);
  });

  it('xlsx with include_metadata: the data sheet and a metadata sheet, read back by exceljs', async () => {
    const done = await completed({ data_type: 'steps', format: 'xlsx', include_metadata: true, filters: { workflow_ids: [wfB] } });
    const file = await download(t, key, pathOf(done.download_url));
    expect(file.headers['content-type']).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(file.body as unknown as ArrayBuffer);
    const sheet = book.getWorksheet('steps')!;
    expect(sheet.rowCount).toBe(51);
    expect((sheet.getRow(1).values as unknown[]).slice(1, 4)).toEqual(['id', 'execution_id', 'workflow_id']);
    expect(sheet.getRow(2).getCell(3).value).toBe(wfB);
    const meta = book.getWorksheet('metadata')!;
    const pairs = Object.fromEntries(meta.getSheetValues().slice(2).map((r) => [(r as unknown[])[1], (r as unknown[])[2]]));
    expect(pairs).toMatchObject({ export_id: done.export_id, data_type: 'steps', row_count: 50, generated_at: done.metadata.generated_at });
  });

  it('every other data type exports its rows; workflow_metrics equal the metrics endpoint', async () => {
    await t.query(
      `insert into triggers (id, organization_id, workflow_id, name, type, status, channel, configuration) values ('trg_seed', ?, ?, 'seed', 'api', 'active', 'whatsapp', '{}')`,
      [org, wfA],
    );
    await t.query(
      `insert into trigger_executions (id, organization_id, trigger_id, workflow_id, execution_id, channel, status, input)
       select 'trgexec_' || substr(id, 6), organization_id, 'trg_seed', workflow_id, id, channel, 'running', '{}' from executions where workflow_id = ? limit 10`,
      [wfA],
    );
    await t.query(`insert into webhooks (id, organization_id, name, url, events, secret) values ('wh_seed', ?, 'h', 'https://h.example/x', '{workflow.completed}', 's')`, [org]);
    await t.query(
      `insert into webhook_logs (id, webhook_id, organization_id, event_id, event_type, status, response_code, response_time_ms, attempt)
       values ('whlog_1', 'wh_seed', ?, 'evt_1', 'workflow.completed', 'success', 200, 12, 1), ('whlog_2', 'wh_seed', ?, 'evt_2', 'workflow.completed', 'failed', 500, 30, 1)`,
      [org, org],
    );
    await t.query(
      `insert into messages (id, organization_id, customer_id, channel, direction, text) select 'msg_multiline', ?, id, 'whatsapp', 'inbound', ? from customers where organization_id = ? limit 1`,
      [org, 'line one\nline "two", end', org],
    );
    const counts: Record<string, number> = { customers: 2, trigger_executions: 10, webhook_logs: 2, messages: N + 50 + 1 };
    for (const [dataType, n] of Object.entries(counts)) {
      const done = await completed({ data_type: dataType });
      const rows = parse((await download(t, key, pathOf(done.download_url))).body, { columns: true }) as Array<Record<string, string>>;
      expect([dataType, rows.length, done.progress.rows_written]).toEqual([dataType, n, n]);
      if (dataType === 'messages') expect(rows.find((r) => r.id === 'msg_multiline')?.text).toBe('line one\nline "two", end');
    }
    const triggerRows = parse((await download(t, key, pathOf((await completed({ data_type: 'trigger_executions', filters: { workflow_ids: [wfA] } })).download_url))).body, { columns: true }) as Array<Record<string, string>>;
    // Each firing reads as its linked execution's seeded status (success or failed).
    const firings = await t.query<{ id: string; status: string }>(
      'select t.id, e.status from trigger_executions t join executions e on e.id = t.execution_id where t.workflow_id = ?',
      [wfA],
    );
    expect(firings).toHaveLength(10);
    expect(triggerRows.map((r) => [r.id, r.status]).sort()).toEqual(firings.map((f) => [f.id, f.status]).sort());

    const done = await completed({ data_type: 'workflow_metrics', start_date: '2026-11-19', end_date: '2026-11-20', filters: { workflow_ids: [wfA] } });
    const rows = parse((await download(t, key, pathOf(done.download_url))).body, { columns: true, cast: true }) as Array<Record<string, string | number>>;
    expect(rows.map((r) => r.date)).toEqual(['2026-11-19', '2026-11-20']);
    const metrics = await t.request.get(`/v1/workflows/${wfA}/metrics?start_date=2026-11-19&end_date=2026-11-20`).set(bearer(key));
    expect(metrics.status).toBe(200);
    expect(rows.map((r) => [r.date, r.executions, r.success_rate, r.average_duration_ms])).toEqual(
      metrics.body.data.daily_metrics.map((d: { date: string; executions: number; success_rate: number; average_duration_ms: number }) => [d.date, d.executions, d.success_rate, d.average_duration_ms]),
    );
    expect(rows[0]).toMatchObject({ workflow_id: wfA, workflow_name: 'Export A' });
  });

  it('rejects bad requests with the field, and records nothing', async () => {
    const otherKey = (await t.createKey('admin', await t.createOrg())).key;
    const foreign = await createWorkflow(t, otherKey, 'Theirs');
    const cases: Array<[Record<string, unknown>, number, string, string]> = [
      [{ data_type: 'invoices' }, 400, 'INVALID_REQUEST', 'data_type'],
      [{ data_type: 'executions', format: 'pdf' }, 400, 'INVALID_REQUEST', 'format'],
      [{}, 400, 'MISSING_REQUIRED_FIELD', 'data_type'],
      [{ data_type: 'executions', filters: { workflow_ids: [wfA, foreign] } }, 404, 'WORKFLOW_NOT_FOUND', 'filters.workflow_ids[1]'],
      [{ data_type: 'webhook_logs', filters: { workflow_ids: [wfA] } }, 400, 'INVALID_REQUEST', 'filters.workflow_ids'],
      [{ data_type: 'executions', start_date: '2026-11-20', end_date: '2026-11-19' }, 400, 'INVALID_DATE_RANGE', 'end_date'],
      [{ data_type: 'executions', filters: { channels: ['fax'] } }, 400, 'INVALID_REQUEST', 'filters.channels[0]'],
      [{ data_type: 'executions', extra: 1 }, 400, 'INVALID_REQUEST', 'extra'],
    ];
    const before = await t.query<{ n: number }>('select count(*)::int as n from exports');
    for (const [body, status, code, field] of cases) {
      const res = await create(body);
      expect([JSON.stringify(body), res.status, res.body.error?.code, res.body.error?.field]).toEqual([JSON.stringify(body), status, code, field]);
    }
    expect(await t.query<{ n: number }>('select count(*)::int as n from exports')).toEqual(before);
  });

  it('scopes, 404 for unknown and other organizations, 409 while processing, 410 once expired', async () => {
    expect((await create({ data_type: 'executions' }, reader)).status).toBe(403);
    const done = await completed({ data_type: 'customers' });
    const otherKey = (await t.createKey('admin', await t.createOrg())).key;
    for (const p of [`/v1/analytics/export/${done.export_id}`, `/v1/analytics/export/${done.export_id}/download`, '/v1/analytics/export/exp_missing/download']) {
      const res = await t.request.get(p.includes('missing') ? p : p).set(bearer(p.includes('missing') ? key : otherKey));
      expect([p, res.status, res.body.error?.code]).toEqual([p, 404, 'EXPORT_NOT_FOUND']);
    }
    // A record still processing (its workflow never ran): the download is not ready.
    await t.query(`insert into exports (id, organization_id, data_type, format, request, status) values ('exp_pending', ?, 'executions', 'csv', '{}', 'processing')`, [org]);
    const pending = await t.request.get('/v1/analytics/export/exp_pending/download').set(bearer(key));
    expect([pending.status, pending.body.error.code]).toEqual([409, 'EXPORT_NOT_READY']);
    expect((await t.request.get('/v1/analytics/export/exp_pending').set(bearer(key))).body.data.progress).toEqual({ rows_written: 0, rows_total: null, percent: 0 });
    await t.query(`update exports set expires_at = now() - interval '1 second' where id = ?`, [done.export_id]);
    const gone = await t.request.get(`/v1/analytics/export/${done.export_id}/download`).set(bearer(key));
    expect([gone.status, gone.body.error.code]).toEqual([410, 'EXPORT_EXPIRED']);
  });

  it('lists exports newest first with pagination; Idempotency-Key replays the creation', async () => {
    const first = await create({ data_type: 'customers' });
    const replay = await t.request.post('/v1/analytics/export').set(bearer(key)).set('Idempotency-Key', 'exp-key-1').send({ data_type: 'webhook_logs' });
    const again = await t.request.post('/v1/analytics/export').set(bearer(key)).set('Idempotency-Key', 'exp-key-1').send({ data_type: 'webhook_logs' });
    expect(replay.status).toBe(201);
    expect([again.status, again.headers['idempotent-replayed'], again.body.data.export_id]).toEqual([201, 'true', replay.body.data.export_id]);
    const page = await t.request.get('/v1/analytics/exports?limit=2').set(bearer(reader));
    expect(page.status).toBe(200);
    expect(page.body.data.map((e: { export_id: string }) => e.export_id)).toEqual([replay.body.data.export_id, first.body.data.export_id]);
    expect(page.body.pagination).toMatchObject({ page: 1, limit: 2, total: expect.any(Number) });
    const bad = await t.request.get('/v1/analytics/exports?limit=101').set(bearer(key));
    expect([bad.status, bad.body.error.field]).toEqual([400, 'limit']);
  });

  it('each completion is an export.completed event in the outbox', async () => {
    const done = await completed({ data_type: 'customers', format: 'json' });
    const events = await t.query<{ type: string; data: Record<string, unknown> }>(`select type, data from events where type = 'export.completed' and data->>'export_id' = ?`, [done.export_id]);
    expect(events).toEqual([
      {
        type: 'export.completed',
        data: { export_id: done.export_id, data_type: 'customers', format: 'json', status: 'completed', row_count: 2, file_size: done.file_size, download_url: done.download_url, expires_at: done.expires_at },
      },
    ]);
  });

  it('webhooks can subscribe to the export and report events', async () => {
    const res = await t.request
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: 'https://localhost/hooks/files', events: ['export.completed', 'export.failed', 'report.completed', 'report.failed'] });
    expect([res.status, res.body.data?.events]).toEqual([201, ['export.completed', 'export.failed', 'report.completed', 'report.failed']]);
    const doc = (await t.request.get('/v1/openapi.json')).body;
    expect(Object.keys(doc.webhooks)).toEqual(expect.arrayContaining(['export.completed', 'export.failed', 'report.completed', 'report.failed']));
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/analytics/export', '/v1/analytics/export/{export_id}/download', '/v1/analytics/exports', '/v1/analytics/reports/{report_id}/download']));
  });

  it('the expiry schedule deletes expired files and marks their records expired', async () => {
    const done = await completed({ data_type: 'customers' });
    const fileKey = (await t.query<{ file_key: string }>('select file_key from exports where id = ?', [done.export_id]))[0]!.file_key;
    expect(await t.services.files.exists(fileKey)).toBe(true);
    await t.query(`update exports set expires_at = now() - interval '1 minute' where id = ?`, [done.export_id]);
    const scheduleId = await ensureFileExpirySchedule(t.services);
    expect(await ensureFileExpirySchedule(t.services)).toBe(scheduleId);
    const schedule = t.services.temporal.client.schedule.getHandle(scheduleId);
    try {
      await schedule.trigger();
      await waitForStatus(t, key, `/v1/analytics/export/${done.export_id}`, 'expired');
      expect(await t.services.files.exists(fileKey)).toBe(false);
      const gone = await t.request.get(`/v1/analytics/export/${done.export_id}/download`).set(bearer(key));
      expect([gone.status, gone.body.error.code]).toEqual([410, 'EXPORT_EXPIRED']);
    } finally {
      await schedule.delete();
    }
  });
});
