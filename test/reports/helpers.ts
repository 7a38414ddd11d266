/** Test data and polling for exports and reports: seeded executions, status waits, binary downloads. */
import type { Response } from 'supertest';
import { bearer, type TestApp } from '../helpers/app';
import { waitFor } from '../helpers/wait';

/** A workflow created through the API (draft is enough to own executions). */
export async function createWorkflow(t: TestApp, key: string, name: string, channel = 'whatsapp'): Promise<string> {
  const res = await t.request
    .post('/v1/workflows')
    .set(bearer(key))
    .send({ name, channel, configuration: { nodes: [{ id: 'hi', type: 'message', content: 'hi' }] } });
  if (res.status !== 201) throw new Error(`workflow create: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id as string;
}

/** Rows per seeding statement: see seedExecutions. */
const SEED_CHUNK = 250;

/**
 * `n` finished executions of `workflowId`, one second apart ending at `end`: every 4th
 * failed, the rest successful, durations 10..1009 ms, with one step and one message each.
 * Inserted SEED_CHUNK at a time, each chunk its own transaction, through the real triggers:
 * the workflow's counters and the hourly rollups are updated per row, and within one
 * transaction every update of the same row is slower than the last (its versions pile up),
 * so one 20 000-row statement took 109 s on a loaded machine where eighty of 250 took 11 s.
 */
export async function seedExecutions(t: TestApp, organizationId: string, workflowId: string, n: number, end: Date, channel = 'whatsapp') {
  const tag = workflowId.slice(-8);
  await t.query(
    `insert into customers (id, organization_id, channel, external_id)
     values (?, ?, ?, ?) on conflict do nothing`,
    [`cus_seed_${tag}`, organizationId, channel, `+1555${tag}`],
  );
  const idOf = (g: number) => `exec_${tag}_${String(g).padStart(7, '0')}`;
  for (let from = 1; from <= n; from += SEED_CHUNK) {
    const to = Math.min(from + SEED_CHUNK - 1, n);
    await t.query(
      `insert into executions (id, organization_id, workflow_id, revision, customer_id, channel, status, started_at, completed_at, duration_ms)
       select 'exec_' || ? || '_' || lpad(g::text, 7, '0'), ?, ?, 1, ?, ?,
              case when g % 4 = 0 then 'failed' else 'success' end,
              ?::timestamptz - g * interval '1 second', ?::timestamptz - g * interval '1 second' + (10 + g % 1000) * interval '1 millisecond',
              10 + g % 1000
         from generate_series(?::int, ?::int) g`,
      [tag, organizationId, workflowId, `cus_seed_${tag}`, channel, end, end, from, to],
    );
    const chunk = [workflowId, idOf(from), idOf(to)];
    await t.query(
      `insert into execution_steps (id, execution_id, organization_id, node_id, type, status, started_at, completed_at, duration_ms)
       select 'step_' || substr(id, 6), id, organization_id, 'hi', 'message', 'completed', started_at, completed_at, duration_ms
         from executions where workflow_id = ? and id between ? and ?`,
      chunk,
    );
    await t.query(
      `insert into messages (id, organization_id, customer_id, channel, direction, text, execution_id, node_id, created_at)
       select 'msg_' || substr(id, 6), organization_id, customer_id, channel, 'outbound', 'hi, "friend", 👋', id, 'hi', started_at
         from executions where workflow_id = ? and id between ? and ?`,
      chunk,
    );
  }
}

export async function waitForStatus(t: TestApp, key: string, path: string, status: string, timeoutMs = 60_000) {
  return await waitFor(
    async () => {
      const res = await t.request.get(path).set(bearer(key));
      return res.status === 200 && res.body.data.status === status ? res.body.data : undefined;
    },
    `${path} ${status}`,
    timeoutMs,
  );
}

/** GET with the body collected as bytes whatever the content type. */
export async function download(t: TestApp, key: string, path: string): Promise<Response & { body: Buffer }> {
  return (await t.request
    .get(path)
    .set(bearer(key))
    .buffer(true)
    .parse((res, done) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done(null, Buffer.concat(chunks)));
    })) as Response & { body: Buffer };
}

export const pathOf = (url: string) => new URL(url).pathname;
