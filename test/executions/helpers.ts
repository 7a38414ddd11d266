/** Shared pieces of the executions tests: workflow factories and waiting for executions. */
import { bearer, type TestApp } from '../helpers/app';
import { waitFor } from '../helpers/wait';

export { waitFor } from '../helpers/wait';

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
