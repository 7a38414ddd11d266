/**
 * Exports and reports with FILE_STORAGE=s3 against a local S3-compatible server: the file
 * lands in the bucket, downloads stream through the API, or answer 302 to a short-lived
 * presigned URL when configured; a storage that refuses the upload fails the export with
 * EXPORT_GENERATION_FAILED and an export.failed event.
 */
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { parse } from 'csv-parse/sync';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestS3, type TestS3 } from '../../helpers/s3';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createWorkflow, download, pathOf, seedExecutions, waitForStatus } from '../helpers';

describe('exports and reports on S3 storage', () => {
  let s3: TestS3;
  const apps: TestApp[] = [];
  const workers: TestWorker[] = [];

  const boot = async (env: Record<string, string>) => {
    const t = await createTestApp(env);
    apps.push(t);
    workers.push(await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) }));
    const { key, organizationId } = await t.createKey('admin');
    return { t, key, organizationId };
  };

  beforeAll(async () => {
    s3 = await startTestS3();
  });
  afterAll(async () => {
    for (const w of workers) await w.stop();
    for (const t of apps) await t.close();
    await s3?.close();
  });

  it('streams the file from the bucket through the API, or redirects to a presigned URL', async () => {
    const { t, key, organizationId } = await boot(s3.env());
    const wf = await createWorkflow(t, key, 'S3 export');
    await seedExecutions(t, organizationId, wf, 1500, new Date('2026-11-20T00:00:00Z'));
    const res = await t.request.post('/v1/analytics/export').set(bearer(key)).send({ data_type: 'executions' });
    expect(res.status).toBe(201);
    const done = await waitForStatus(t, key, `/v1/analytics/export/${res.body.data.export_id}`, 'completed');

    const file = await download(t, key, pathOf(done.download_url));
    expect(file.status).toBe(200);
    expect(Number(file.headers['content-length'])).toBe(file.body.length);
    expect(file.headers['content-disposition']).toMatch(/^attachment; filename="executions-.*\.csv"$/);
    const rows = parse(file.body, { columns: true }) as Array<Record<string, string>>;
    expect(rows).toHaveLength(1500);

    // The object is in the bucket under the organization's prefix.
    const client = new S3Client({ region: 'us-east-1', endpoint: s3.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });
    const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `exports/${organizationId}/${done.export_id}.csv` }));
    expect(Number(object.ContentLength)).toBe(file.body.length);
    client.destroy();

    // A second deployment configured for presigned downloads reads the same bucket and database.
    const signing = await createTestApp({ ...s3.env({ S3_PRESIGNED_DOWNLOAD_TTL_SECONDS: '60' }), DATABASE_URL: t.databaseUrl });
    apps.push(signing);
    const redirect = await signing.request.get(pathOf(done.download_url)).set(bearer(key)).redirects(0);
    expect(redirect.status).toBe(302);
    const location = redirect.headers.location as string;
    expect(location.startsWith(`${s3.endpoint}/${s3.bucket}/exports/`)).toBe(true);
    expect(location).toContain('X-Amz-Expires=60');
    const fetched = await fetch(location);
    expect(fetched.status).toBe(200);
    expect(Buffer.from(await fetched.arrayBuffer()).equals(file.body)).toBe(true);

    // With include_metadata the metadata travels inside the NDJSON file, so the presigned download (no API headers) still has it.
    const withMetadata = await t.request.post('/v1/analytics/export').set(bearer(key)).send({ data_type: 'executions', format: 'json', include_metadata: true });
    expect(withMetadata.status).toBe(201);
    const metadataDone = await waitForStatus(t, key, `/v1/analytics/export/${withMetadata.body.data.export_id}`, 'completed');
    const signed = await signing.request.get(pathOf(metadataDone.download_url)).set(bearer(key)).redirects(0);
    expect(signed.status).toBe(302);
    const ndjson = await fetch(signed.headers.location as string);
    expect(ndjson.headers.get('x-export-id')).toBeNull();
    const [meta, ...lines] = (await ndjson.text()).trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(meta).toEqual({ type: 'metadata', ...metadataDone.metadata });
    expect(meta).toMatchObject({ export_id: metadataDone.export_id, data_type: 'executions', row_count: 1500 });
    expect(lines).toHaveLength(1500);

    const report = await t.request.post('/v1/analytics/reports').set(bearer(key)).send({ name: 'S3 report', metrics: ['total_executions'], format: 'pdf', filters: { start_date: '2026-11-01', end_date: '2026-11-20' } });
    expect(report.status).toBe(201);
    const reportDone = await waitForStatus(t, key, `/v1/analytics/reports/${report.body.data.report_id}`, 'completed');
    const pdf = await download(t, key, pathOf(reportDone.download_url));
    expect([pdf.status, pdf.headers['content-type'], pdf.body.subarray(0, 5).toString()]).toEqual([200, 'application/pdf', '%PDF-']);
  });

  it('a storage that refuses the upload fails the export after its retries, with an export.failed event', async () => {
    const { t, key } = await boot(s3.env({ S3_BUCKET: 'no-such-bucket' }));
    const res = await t.request.post('/v1/analytics/export').set(bearer(key)).send({ data_type: 'customers', format: 'xlsx' });
    expect(res.status).toBe(201);
    const id = res.body.data.export_id as string;
    const failed = await waitForStatus(t, key, `/v1/analytics/export/${id}`, 'failed', 120_000);
    expect(failed.error).toEqual({ code: 'EXPORT_GENERATION_FAILED', message: expect.any(String) });
    const dl = await t.request.get(`/v1/analytics/export/${id}/download`).set(bearer(key));
    expect([dl.status, dl.body.error.code]).toEqual([409, 'EXPORT_NOT_READY']);
    expect(await t.query(`select data from events where type = 'export.failed'`)).toEqual([
      { data: { export_id: id, data_type: 'customers', format: 'xlsx', status: 'failed', error: failed.error } },
    ]);
  });
});
