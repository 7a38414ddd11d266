/**
 * `GET /v1/workflows/{id}` answers with JSON text that PostgreSQL builds (src/db/json-sql.ts,
 * `successRateSql`): each field must be what the JS side writes for the same row, as the
 * list and the writes answer it.
 */
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { isoMillisSql } from '../../../src/db/json-sql';
import { successRateSql, successRatio } from '../../../src/modules/metrics/execution-metrics';

let t: TestApp;
let key: string;
beforeAll(async () => {
  t = await createTestApp();
  key = (await t.createKey('admin')).key;
});
afterAll(() => t.close());

const configuration = {
  trigger: { type: 'keyword', keywords: ['häy', 'quote " and \\ backslash'] },
  nodes: [{ id: 'hello', type: 'message', content: 'Line one\nline two\ttab \u00e9\u{1F600} </script>' }],
};

test('the answer is the row as the list gives it, plus configuration and revision, byte for byte in every field', async () => {
  const created = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: 'Read me', channel: 'voice', configuration });
  expect(created.body.error).toBeUndefined();
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  // Microseconds the API never writes itself, and counters that make a rate of 1/3.
  await t.query(
    `update workflows set created_at = '2026-01-02 03:04:05.678999+00', updated_at = '2026-03-04 05:06:07.000001+00',
            execution_count = 4, success_count = 1, failure_count = 2 where id = ?`,
    [id],
  );

  const got = await t.request.get(`/v1/workflows/${id}`).set(bearer(key));
  expect(got.status).toBe(200);
  expect(got.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(got.body).toEqual({
    data: {
      id,
      name: 'Read me',
      description: '',
      status: 'draft',
      channel: 'voice',
      channel_connection_id: null,
      created_at: '2026-01-02T03:04:05.678Z',
      updated_at: '2026-03-04T05:06:07.000Z',
      execution_count: 4,
      success_rate: 0.3333,
      configuration,
      revision: 1,
    },
  });

  // The list answers the same row through the ORM and JS: the shared fields agree.
  const listed = await t.request.get('/v1/workflows?limit=100').set(bearer(key));
  const { configuration: _c, revision: _r, ...shared } = got.body.data;
  expect(listed.body.data.find((w: { id: string }) => w.id === id)).toEqual(shared);
});

test('success_rate from SQL is successRatio, written the same, for every pair of counts up to 300', async () => {
  const rows = await t.query<{ success: number; failed: number; json: string }>(
    `select s as success, f as failed, json_build_object('r', ${successRateSql('s', 'f')})::text as json
       from generate_series(0, 300) s, generate_series(0, 300) f`,
  );
  expect(rows).toHaveLength(301 * 301);
  const mismatches = rows.filter((r) => {
    const expected = r.success + r.failed === 0 ? null : successRatio(r.success, r.failed);
    return r.json.replace(/\s/g, '') !== JSON.stringify({ r: expected });
  });
  expect(mismatches).toEqual([]);
});

test('timestamps from SQL are toISOString of the dates the pg driver reads, microseconds truncated', async () => {
  const rows = await t.query<{ at: Date; iso: string }>(
    `select v as at, ${isoMillisSql('v')} as iso
       from unnest(array['2026-11-25 14:00:00+00', '2026-11-25 23:59:59.999999+00', '1999-12-31 23:59:59.0005+00',
                         '2026-06-30 10:00:00.123456+02']::timestamptz[]) v`,
  );
  for (const r of rows) expect(r.iso).toBe(new Date(r.at).toISOString());
});
