/** Shared pieces of the executions tests: workflow factories and bounded polling. */
import { bearer, type TestApp } from '../helpers/app';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a value that is not undefined (bounded; never a fixed sleep). */
export async function waitFor<T>(fn: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(100);
  }
}

export async function createActiveWorkflow(t: TestApp, key: string, body: Record<string, unknown>): Promise<string> {
  const created = await t.request.post('/v1/workflows').set(bearer(key)).send(body);
  if (created.status !== 201) throw new Error(`create workflow: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.data.id as string;
  const activated = await t.request.post(`/v1/workflows/${id}/activate`).set(bearer(key));
  if (activated.status !== 200) throw new Error(`activate: ${activated.status} ${JSON.stringify(activated.body)}`);
  return id;
}

export async function waitForExecution(t: TestApp, key: string, workflowId: string, executionId: string, status: string | ((b: any) => boolean), timeoutMs = 30_000) {
  const ok = typeof status === 'string' ? (d: any) => d.status === status : status;
  return waitFor(
    async () => {
      const res = await t.request.get(`/v1/workflows/${workflowId}/executions/${executionId}`).set(bearer(key));
      return res.status === 200 && ok(res.body.data) ? res.body.data : undefined;
    },
    `execution ${executionId} to be ${String(status)}`,
    timeoutMs,
  );
}
