/** Shared pieces of the replay tests: cancelled executions to replay, and waiting on a replay. */
import { bearer, type TestApp } from '../helpers/app';
import { createActiveWorkflow, waitFor } from '../executions/helpers';

/** A workflow whose executions wait on a form: retries sit waiting and send nothing. */
export async function createFormWorkflow(t: TestApp, key: string, keyword: string, withTrigger = true): Promise<string> {
  return await createActiveWorkflow(t, key, {
    name: `Form ${keyword}`,
    channel: 'whatsapp',
    configuration: {
      ...(withTrigger ? { trigger: { type: 'keyword', keywords: [keyword] } } : {}),
      nodes: [{ id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Email?' }] }],
    },
  });
}

/** Starts one execution per customer through POST /v1/messages and cancels each through the API. */
export async function cancelledExecutions(t: TestApp, key: string, workflowId: string, keyword: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: `${keyword}-${i}`, message: keyword });
    if (res.status !== 201) throw new Error(`message: ${res.status} ${JSON.stringify(res.body)}`);
    const id = (res.body.data.executions as Array<{ id: string; workflow_id: string }>).find((e) => e.workflow_id === workflowId)!.id;
    const cancelled = await t.request.post(`/v1/workflows/${workflowId}/executions/${id}/cancel`).set(bearer(key));
    if (cancelled.status !== 200) throw new Error(`cancel: ${cancelled.status} ${JSON.stringify(cancelled.body)}`);
    ids.push(id);
  }
  return ids;
}

export async function waitForReplay(t: TestApp, key: string, id: string, ok: (r: any) => boolean, what: string, timeoutMs = 60_000) {
  return await waitFor(
    async () => {
      const res = await t.request.get(`/v1/replays/${id}`).set(bearer(key));
      return res.status === 200 && ok(res.body.data) ? res.body.data : undefined;
    },
    `replay ${id} ${what}`,
    timeoutMs,
  );
}

/** original execution id → how many executions retry it. */
export async function retriesOf(t: TestApp, originals: string[]): Promise<Map<string, number>> {
  const rows = await t.query<{ retry_of: string; n: number }>(
    'select retry_of, count(*)::int as n from executions where retry_of in (select jsonb_array_elements_text(?::jsonb)) group by retry_of',
    [JSON.stringify(originals)],
  );
  return new Map(rows.map((r) => [r.retry_of, r.n]));
}
