/**
 * Custom reports through HTTP: CSV, JSON and PDF read back with real parsers (csv-parse,
 * JSON, pdf-parse's text extraction), their numbers equal to the workflow metrics endpoint,
 * statuses, errors, scopes, lists, expiry and the report.* events.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { pdfText } from '../../helpers/pdf-text';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { resendWhileUnavailable } from '../../helpers/wait';
import { createWorkflow, download, pathOf, seedExecutions, waitForStatus } from '../helpers';

const END = new Date('2026-11-20T12:00:00Z');
const PERIOD = { start_date: '2026-11-19', end_date: '2026-11-20' };

describe('custom reports', () => {
  let t: TestApp;
  let worker: TestWorker;
  let dir: string;
  let key: string;
  let reader: string;
  let org: string;
  let wfA: string;
  let wfB: string;

  const create = (body: Record<string, unknown>, k = key) => t.request.post('/v1/analytics/reports').set(bearer(k)).send(body);
  const completed = async (body: Record<string, unknown>) => {
    const res = await create(body);
    expect(res.status).toBe(201);
    return await waitForStatus(t, key, `/v1/analytics/reports/${res.body.data.report_id}`, 'completed');
  };
  const analyticsOf = async (wf: string, query = '') => {
    // A 503 (the database busy under a loaded full run) is resent after its Retry-After, as a client does.
    const res = await resendWhileUnavailable(() => t.request.get(`/v1/analytics/workflows/${wf}?start_date=${PERIOD.start_date}&end_date=${PERIOD.end_date}${query}`).set(bearer(key)));
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const metricsOf = async (wf: string) => (await t.request.get(`/v1/workflows/${wf}/metrics?start_date=${PERIOD.start_date}&end_date=${PERIOD.end_date}`).set(bearer(key))).body.data.metrics;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'wfa-reports-'));
    t = await createTestApp({ FILE_STORAGE_DIR: dir });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    const admin = await t.createKey('admin');
    key = admin.key;
    org = admin.organizationId;
    reader = (await t.createKey('read')).key;
    wfA = await createWorkflow(t, key, 'Support bot');
    wfB = await createWorkflow(t, key, 'Sales bot', 'instagram');
    await seedExecutions(t, org, wfA, 500, END);
    await seedExecutions(t, org, wfB, 40, END, 'instagram');
    // Form answers on wfA: every 10th execution answered rating 1 + (g % 5) and nps g % 11, so CSAT and NPS are numbers.
    await t.query(
      `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, completed_at, duration_ms, output)
       select 'step_ask_' || substr(e.id, 6), e.id, e.organization_id, 'ask', 'form', 'completed', e.started_at, e.completed_at, 5,
              jsonb_build_object('scores', jsonb_build_object('rating', jsonb_build_array(1 + g % 5), 'nps', jsonb_build_array(g % 11)))
         from (select x.*, row_number() over (order by x.id) as g from executions x where x.workflow_id = ?) e where e.g % 10 = 0`,
      [wfA],
    );
  });
  afterAll(async () => {
    await worker?.stop();
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('CSV (the default) grouped by workflow: one row per workflow, numbers equal to the metrics endpoint', async () => {
    const res = await create({
      name: 'Weekly numbers',
      description: 'per workflow',
      metrics: ['total_executions', 'success_rate', 'average_duration_ms', 'failed_executions'],
      filters: { ...PERIOD, workflow_ids: [wfA, wfB] },
      group_by: ['workflow_id'],
      granularity: 'day',
    });
    expect(res.status).toBe(201);
    expect(res.headers['x-ratelimit-limit']).toBe('50');
    expect(res.body.data).toMatchObject({ report_id: expect.stringMatching(/^rpt_/), name: 'Weekly numbers', status: 'generating', created_at: expect.any(String), estimated_completion: expect.any(String) });
    const done = await waitForStatus(t, key, `/v1/analytics/reports/${res.body.data.report_id}`, 'completed');
    expect(done).toMatchObject({ format: 'csv', completed_at: expect.any(String), expires_at: expect.any(String), error: null, download_url: expect.stringContaining(`/v1/analytics/reports/${done.report_id}/download`) });

    const file = await download(t, reader, pathOf(done.download_url));
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(file.headers['content-disposition']).toBe(`attachment; filename="weekly-numbers-${done.report_id}.csv"`);
    expect(Number(file.headers['content-length'])).toBe(file.body.length);
    const rows = parse(file.body, { columns: true, cast: true }) as Array<Record<string, string | number>>;
    const a = await metricsOf(wfA);
    const b = await metricsOf(wfB);
    expect(rows).toEqual(
      [
        { workflow_id: wfA, workflow_name: 'Support bot', m: a },
        { workflow_id: wfB, workflow_name: 'Sales bot', m: b },
      ]
        .sort((x, y) => (x.workflow_id < y.workflow_id ? -1 : 1))
        .map(({ workflow_id, workflow_name, m }) => ({
          workflow_id,
          workflow_name,
          total_executions: m.total_executions,
          success_rate: m.success_rate,
          average_duration_ms: m.average_duration_ms,
          failed_executions: m.failed_executions,
        })),
    );
    expect(a.total_executions).toBe(500);
  });

  it("the contract's example body: customer_satisfaction is reportable, equal to the analytics endpoint", async () => {
    const res = await create({
      name: 'Monthly Performance Report',
      description: 'Workflow performance for November',
      metrics: ['total_executions', 'success_rate', 'average_duration_ms', 'customer_satisfaction'],
      filters: { ...PERIOD, workflow_ids: [wfA, wfB] },
      group_by: ['workflow_id'],
      granularity: 'day',
    });
    expect(res.status).toBe(201);
    const done = await waitForStatus(t, key, `/v1/analytics/reports/${res.body.data.report_id}`, 'completed');
    const rows = parse((await download(t, key, pathOf(done.download_url))).body, { columns: true, cast: true }) as Array<Record<string, string | number>>;
    const [a, b] = [(await analyticsOf(wfA)).metrics, (await analyticsOf(wfB)).metrics];
    expect(a.customer_satisfaction).toEqual(expect.any(Number));
    expect(b.customer_satisfaction).toBeNull();
    const pick = (m: Record<string, unknown>) => ({ total_executions: m.total_executions, success_rate: m.success_rate, average_duration_ms: m.average_duration_ms });
    const expected = [
      { workflow_id: wfA, workflow_name: 'Support bot', ...pick(a), customer_satisfaction: a.customer_satisfaction },
      // No answers: null in the API, an empty cell in the CSV.
      { workflow_id: wfB, workflow_name: 'Sales bot', ...pick(b), customer_satisfaction: '' },
    ].sort((x, y) => (x.workflow_id < y.workflow_id ? -1 : 1));
    expect(rows).toEqual(expected);
  });

  it('every analytics metric is reportable: each group equals the analytics endpoint, metrics and daily_metrics', async () => {
    const all = [
      'total_executions',
      'successful_executions',
      'failed_executions',
      'success_rate',
      'average_duration_ms',
      'total_messages_sent',
      'total_messages_received',
      'unique_customers',
      'channel_breakdown',
      'customer_satisfaction',
      'net_promoter_score',
    ];
    const done = await completed({ name: 'Everything', metrics: all, filters: PERIOD, group_by: ['workflow_id', 'channel'], granularity: 'day', format: 'json' });
    const body = JSON.parse((await download(t, key, pathOf(done.download_url))).body.toString('utf8'));
    const expected = await Promise.all(
      [wfA, wfB].sort().map(async (wf) => {
        const a = await analyticsOf(wf);
        return { workflow_id: wf, channel: Object.keys(a.metrics.channel_breakdown)[0], metrics: a.metrics, series: a.daily_metrics };
      }),
    );
    expect(body.groups.map((g: Record<string, unknown>) => ({ workflow_id: g.workflow_id, channel: g.channel, metrics: g.metrics, series: g.series }))).toEqual(expected);
    expect(expected[0]!.metrics.net_promoter_score === null && expected[1]!.metrics.net_promoter_score === null).toBe(false);

    // A channel group is the analytics endpoint's group_by=channel group.
    const byChannel = await completed({ name: 'Channel', metrics: ['customer_satisfaction', 'net_promoter_score', 'unique_customers'], filters: { ...PERIOD, workflow_ids: [wfA] }, group_by: ['channel'], format: 'json' });
    const channelGroups = JSON.parse((await download(t, key, pathOf(byChannel.download_url))).body.toString('utf8')).groups;
    const analyticsGroups = (await analyticsOf(wfA, '&group_by=channel&metrics=customer_satisfaction,net_promoter_score,unique_customers')).groups;
    expect(channelGroups.map((g: { channel: string; metrics: unknown }) => ({ key: { channel: g.channel }, metrics: g.metrics }))).toEqual(analyticsGroups);
  });

  it('JSON grouped by channel with the granularity series', async () => {
    const done = await completed({ name: 'Channels', metrics: ['total_executions', 'unique_customers'], filters: PERIOD, group_by: ['channel'], granularity: 'day', format: 'json' });
    const file = await download(t, key, pathOf(done.download_url));
    expect(file.headers['content-type']).toBe('application/json; charset=utf-8');
    const body = JSON.parse(file.body.toString('utf8'));
    expect(body).toMatchObject({ report_id: done.report_id, name: 'Channels', granularity: 'day', period: { start_date: '2026-11-19T00:00:00.000Z', end_date: '2026-11-21T00:00:00.000Z' } });
    expect(body.groups.map((g: { channel: string; metrics: unknown }) => [g.channel, g.metrics])).toEqual([
      ['instagram', { total_executions: 40, unique_customers: 1 }],
      ['whatsapp', { total_executions: 500, unique_customers: 1 }],
    ]);
    expect(body.groups[1].series.map((s: { date: string }) => s.date)).toEqual(['2026-11-19', '2026-11-20']);
  });

  it('PDF: the title block in words, labelled values with units, a chart per time-series metric; a 30-day hourly report charts per day', async () => {
    const done = await completed({
      name: 'Monthly PDF',
      metrics: ['total_executions', 'success_rate', 'customer_satisfaction'],
      filters: { ...PERIOD, workflow_ids: [wfA] },
      group_by: ['workflow_id'],
      granularity: 'hour',
      format: 'pdf',
    });
    const file = await download(t, key, pathOf(done.download_url));
    expect(file.headers['content-type']).toBe('application/pdf');
    expect(file.body.subarray(0, 5).toString()).toBe('%PDF-');
    const text = (await pdfText(file.body)).replace(/\s+/g, ' ');
    const a = await analyticsOf(wfA);
    const [orgName] = await t.query<{ name: string }>('select name from organizations where id = ?', [org]);
    expect(text).toContain('Monthly PDF');
    expect(text).toContain(`Organization ${orgName!.name}`);
    expect(text).toContain('Period 19–20 November 2026, UTC');
    expect(text).toContain('Workflows Support bot');
    expect(text).toContain('Values per hour');
    expect(text).toContain(`Workflow ID ${wfA}`);
    const percent = `${new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 }).format(a.metrics.success_rate * 100)} %`;
    expect(text).toContain(`Executions ${a.metrics.total_executions} Success rate ${percent} Customer satisfaction ${a.metrics.customer_satisfaction} / 5 (50 answers)`);
    expect(text).toContain('Executions per hour');
    expect(text).toContain('Success rate per hour');
    expect(text).toContain('Page 1 of');
    expect(text).not.toMatch(/total_executions|\.000Z/);

    // 30 days at hourly granularity: the charts are drawn per day and say so; the JSON keeps the hours.
    const month = { name: 'Hourly month', metrics: ['total_executions'], filters: { start_date: '2026-10-22', end_date: '2026-11-20', workflow_ids: [wfA] }, granularity: 'hour' };
    const monthPdf = await completed({ ...month, format: 'pdf' });
    const monthText = (await pdfText((await download(t, key, pathOf(monthPdf.download_url))).body)).replace(/\s+/g, ' ');
    expect(monthText).toContain('Period 22 October – 20 November 2026, UTC');
    expect(monthText).toContain('Executions per day');
    expect(monthText).toContain('Shown per day: 720 hourly values are too many for one chart.');
    const monthJson = await completed({ ...month, format: 'json' });
    const json = JSON.parse((await download(t, key, pathOf(monthJson.download_url))).body.toString('utf8'));
    expect(json.groups[0].series).toHaveLength(720);
    expect(Object.keys(json.groups[0]).sort()).toEqual(['metrics', 'series']);
  });

  it('rejects unknown metrics, granularities, formats, group_by and foreign workflows with the field', async () => {
    const otherKey = (await t.createKey('admin', await t.createOrg())).key;
    const foreign = await createWorkflow(t, otherKey, 'Theirs');
    const base = { name: 'x', metrics: ['total_executions'] };
    const cases: Array<[Record<string, unknown>, number, string, string]> = [
      [{ ...base, metrics: ['total_executions', 'happiness'] }, 400, 'INVALID_METRICS', 'metrics[1]'],
      [{ ...base, metrics: ['messages_sent'] }, 400, 'INVALID_METRICS', 'metrics[0]'],
      [{ ...base, granularity: 'minute' }, 422, 'INVALID_GRANULARITY', 'granularity'],
      [{ ...base, format: 'xlsx' }, 400, 'INVALID_REQUEST', 'format'],
      [{ ...base, group_by: ['customer_id'] }, 400, 'INVALID_REQUEST', 'group_by[0]'],
      [{ ...base, filters: { workflow_ids: [foreign] } }, 404, 'WORKFLOW_NOT_FOUND', 'filters.workflow_ids[0]'],
      [{ ...base, filters: { start_date: '2026-11-20', end_date: '2026-11-18' } }, 400, 'INVALID_DATE_RANGE', 'end_date'],
      [{ metrics: ['total_executions'] }, 400, 'MISSING_REQUIRED_FIELD', 'name'],
    ];
    for (const [body, status, code, field] of cases) {
      const res = await create(body);
      expect([JSON.stringify(body), res.status, res.body.error?.code, res.body.error?.field]).toEqual([JSON.stringify(body), status, code, field]);
    }
    expect((await create(base, reader)).status).toBe(403);
    // The 400 for an unknown metric lists the accepted names.
    const unknown = await create({ ...base, metrics: ['happiness'] });
    for (const name of ['total_executions', 'total_messages_sent', 'channel_breakdown', 'customer_satisfaction', 'net_promoter_score']) expect(unknown.body.error.message).toContain(name);
  });

  it('statuses and errors: 404 across organizations, 409 while generating, failed with REPORT_GENERATION_FAILED, 410 expired; list newest first', async () => {
    const done = await completed({ name: 'Kept', metrics: ['total_executions'] });
    const otherKey = (await t.createKey('admin', await t.createOrg())).key;
    for (const p of [`/v1/analytics/reports/${done.report_id}`, `/v1/analytics/reports/${done.report_id}/download`]) {
      const res = await t.request.get(p).set(bearer(otherKey));
      expect([p, res.status, res.body.error?.code]).toEqual([p, 404, 'REPORT_NOT_FOUND']);
    }
    await t.query(`insert into reports (id, organization_id, name, format, request, status) values ('rpt_pending', ?, 'p', 'csv', '{}', 'generating')`, [org]);
    const pending = await t.request.get('/v1/analytics/reports/rpt_pending/download').set(bearer(key));
    expect([pending.status, pending.body.error.code]).toEqual([409, 'REPORT_NOT_READY']);

    // A report whose stored request cannot be computed fails after its retries, with an event.
    await t.query(`insert into reports (id, organization_id, name, format, request, status, file_key) values ('rpt_broken', ?, 'b', 'csv', '{"metrics":["total_executions"],"filters":{"start_date":"not a date"},"group_by":[],"granularity":"day"}', 'generating', 'reports/x/rpt_broken.csv')`, [org]);
    await t.services.temporal.client.workflow.start('reportWorkflow', { taskQueue: t.config.TEMPORAL_TASK_QUEUE, workflowId: 'report:rpt_broken', args: [{ organizationId: org, id: 'rpt_broken' }] });
    const failed = await waitForStatus(t, key, '/v1/analytics/reports/rpt_broken', 'failed', 90_000);
    expect(failed.error).toEqual({ code: 'REPORT_GENERATION_FAILED', message: expect.any(String) });
    const failedDownload = await t.request.get('/v1/analytics/reports/rpt_broken/download').set(bearer(key));
    expect([failedDownload.status, failedDownload.body.error.code]).toEqual([409, 'REPORT_NOT_READY']);
    expect(await t.query(`select data from events where type = 'report.failed'`)).toEqual([
      { data: { report_id: 'rpt_broken', name: 'b', format: 'csv', status: 'failed', error: failed.error } },
    ]);
    const events = await t.query<{ data: Record<string, unknown> }>(`select data from events where type = 'report.completed' and data->>'report_id' = ?`, [done.report_id]);
    expect(events).toEqual([{ data: { report_id: done.report_id, name: 'Kept', format: 'csv', status: 'completed', download_url: done.download_url, expires_at: done.expires_at } }]);

    await t.query(`update reports set expires_at = now() - interval '1 second' where id = ?`, [done.report_id]);
    const gone = await t.request.get(`/v1/analytics/reports/${done.report_id}/download`).set(bearer(key));
    expect([gone.status, gone.body.error.code]).toEqual([410, 'REPORT_EXPIRED']);

    const list = await t.request.get('/v1/analytics/reports?limit=3').set(bearer(reader));
    expect(list.status).toBe(200);
    expect(list.body.data[0].report_id).toBe('rpt_broken');
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 3, total: expect.any(Number) });
  });
});
