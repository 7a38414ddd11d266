/**
 * What an operator sees in Temporal: the execution id is the workflow id, the custom search
 * attributes find it, the memo names the workflow, the run's summary and details say what it
 * is (customer id masked), and its activities say what they do.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { SearchAttributeKeys } from '../../../temporal/shared';
import type { ExecutionState } from '../../../temporal/summaries.shared';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

/** Any address: the links are checked by resolving what they name through the Temporal client. */
const UI_URL = 'http://temporal-ui.example:8233';

describe('executions in the Temporal UI', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp({ TEMPORAL_UI_URL: `${UI_URL}/` });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
  });

  it('finds an execution by its id and by every search attribute, with the workflow name in the memo', async () => {
    const me = await t.request.get('/v1/me').set(bearer(key));
    const organizationId: string = me.body.data.organization_id;
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Operator view',
      channel: 'instagram',
      configuration: { trigger: { type: 'keyword', keywords: ['ping'] }, nodes: [{ id: 'pong', type: 'message', content: 'pong' }] },
    });
    const sent = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'instagram', customer_id: 'ig-77', message: 'ping' });
    expect(sent.status).toBe(201);
    const executionId: string = sent.body.data.executions[0].id;
    const customerId: string = sent.body.data.customer_id;
    await waitForExecution(t, key, workflowId, executionId, 'success');

    const handle = t.services.temporal.client.workflow.getHandle(executionId);
    // The row says success once the last activity commits; the run closes a workflow task later.
    await handle.result();
    const described = await handle.describe();
    expect(described.workflowId).toBe(executionId);
    expect(described.status.name).toBe('COMPLETED');
    const attrs = described.typedSearchAttributes;
    expect(attrs.get(SearchAttributeKeys.organizationId)).toBe(organizationId);
    expect(attrs.get(SearchAttributeKeys.workflowId)).toBe(workflowId);
    expect(attrs.get(SearchAttributeKeys.customerId)).toBe(customerId);
    expect(attrs.get(SearchAttributeKeys.channel)).toBe('instagram');
    expect(JSON.stringify(await described.memo)).toContain('Operator view');

    for (const query of [
      `WfaWorkflowId = '${workflowId}'`,
      `WfaOrganizationId = '${organizationId}' AND WfaChannel = 'instagram'`,
      `WfaCustomerId = '${customerId}'`,
    ]) {
      const found = await waitFor(
        async () => {
          const ids: string[] = [];
          for await (const wf of t.services.temporal.client.workflow.list({ query })) ids.push(wf.workflowId);
          return ids.includes(executionId) ? ids : undefined;
        },
        `visibility query ${query}`,
        15_000,
      );
      expect(found).toContain(executionId);
    }
  });

  /** What the Temporal UI shows as the run's current details (it asks the SDK's metadata query). */
  async function currentDetails(executionId: string): Promise<string | undefined> {
    const metadata = await t.services.temporal.client.workflow.getHandle(executionId).query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    return metadata.currentDetails;
  }

  /** The activity summaries of a run's history, in order. */
  async function activitySummaries(executionId: string): Promise<string[]> {
    const history = await t.services.temporal.client.workflow.getHandle(executionId).fetchHistory();
    return (history.events ?? [])
      .filter((e: temporal.api.history.v1.IHistoryEvent) => e.activityTaskScheduledEventAttributes && e.userMetadata?.summary)
      .map((e: temporal.api.history.v1.IHistoryEvent) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary!));
  }

  it('a form conversation reads as a sentence: summary with the masked customer, details linking to the API, summarized activities, current details and query state while waiting and after', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Greeter',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['hello'] },
        nodes: [
          { id: 'ask', type: 'form', timeout_seconds: 600, fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'hi' },
          { id: 'hi', type: 'message', content: 'Thanks!' },
        ],
      },
    });
    const sent = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: '+15550000001', message: 'hello' });
    expect(sent.status).toBe(201);
    const executionId: string = sent.body.data.executions[0].id;
    const customerId: string = sent.body.data.customer_id;
    await waitForExecution(t, key, workflowId, executionId, (d) => d.output?.next_action === 'wait_for_input');

    const handle = t.services.temporal.client.workflow.getHandle(executionId);
    const described = await handle.describe();
    expect(await described.staticSummary()).toBe('Greeter · whatsapp · …0001 · rev 1');
    const details = await described.staticDetails();
    for (const id of [executionId, workflowId, customerId]) expect(details).toContain(id);
    expect(details).toContain(`(${t.config.BASE_URL}/v1/workflows/${workflowId}/executions/${executionId})`);
    // Nothing of the customer's number beyond its last 4 digits.
    expect(`${await described.staticSummary()}${details}`).not.toContain('5550000');
    expect(await activitySummaries(executionId)).toEqual(['node ask · form · email']);

    // Where it stands: the UI's current details (the SDK's metadata query) and our `state` query.
    // The prompt's activity records wait_for_input; the run enters the wait as its result comes back.
    const waiting = await waitFor(async () => {
      const state = await handle.query<ExecutionState>('state');
      return state.phase === 'waiting' ? state : undefined;
    }, 'the run to wait');
    expect(waiting).toMatchObject({ phase: 'waiting', node_id: 'ask', node_type: 'form', field: 'email', attempt: 1, steps_completed: 0 });
    const since = Date.parse(waiting.waiting_since!);
    expect(Date.parse(waiting.times_out_at!) - since).toBe(600_000);
    const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
    expect(await currentDetails(executionId)).toBe(`waiting for email (node ask, since ${hhmm(since)} UTC, times out ${hhmm(since + 600_000)} UTC)`);

    await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: '+15550000001', message: 'ada@example.com' });
    await waitForExecution(t, key, workflowId, executionId, 'success');
    await handle.result();
    expect(await activitySummaries(executionId)).toEqual(['node ask · form · email', 'node ask · form · record answers']);
    // After completion both still answer (the closed run is replayed for a query).
    expect(await handle.query<ExecutionState>('state')).toMatchObject({ phase: 'success', node_id: 'hi', steps_completed: 2 });
    expect(await currentDetails(executionId)).toBe('done');
    // The summary and details are fixed at the start: still there after completion.
    expect(await (await handle.describe()).staticSummary()).toBe('Greeter · whatsapp · …0001 · rev 1');
  });

  /** The run a `temporal_ui_url` names (namespace and workflow id; the UI opens its latest run). */
  async function runOf(url: unknown) {
    expect(typeof url).toBe('string');
    const match = /^http:\/\/temporal-ui\.example:8233\/namespaces\/([^/]+)\/workflows\/([^/]+)$/.exec(url as string);
    expect(match).not.toBeNull();
    expect(decodeURIComponent(match![1]!)).toBe(t.config.TEMPORAL_NAMESPACE);
    return await t.services.temporal.client.workflow.getHandle(decodeURIComponent(match![2]!)).describe();
  }

  it('execution, export, report, replay and dry-run responses link to their runs in the Temporal UI, whose details link back', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Linked',
      channel: 'voice',
      configuration: { trigger: { type: 'keyword', keywords: ['link'] }, nodes: [{ id: 'hi', type: 'message', content: 'hi' }] },
    });
    const sent = await t.request.post('/v1/messages').set(bearer(key)).send({ channel: 'voice', customer_id: '+15550000002', message: 'link' });
    const executionId: string = sent.body.data.executions[0].id;
    const execution = await waitForExecution(t, key, workflowId, executionId, 'success');
    const run = await runOf(execution.temporal_ui_url);
    expect(run).toMatchObject({ workflowId: executionId, type: 'executionWorkflow' });
    const listed = await t.request.get(`/v1/workflows/${workflowId}/executions`).set(bearer(key));
    expect(listed.body.data[0]).toMatchObject({ id: executionId, temporal_ui_url: execution.temporal_ui_url });

    const jobs: Array<[string, string, Record<string, unknown>, string, string]> = [
      ['/v1/analytics/export', 'export_id', { data_type: 'executions', format: 'csv' }, 'exportWorkflow', '/v1/analytics/export/'],
      ['/v1/analytics/reports', 'report_id', { name: 'Linked', metrics: ['total_executions'] }, 'reportWorkflow', '/v1/analytics/reports/'],
      ['/v1/replays', 'id', { filter: { execution_ids: [executionId] } }, 'replayWorkflow', '/v1/replays/'],
      [`/v1/workflows/${workflowId}/dry-runs`, 'id', { execution_ids: [executionId] }, 'dryRunWorkflow', `/v1/workflows/${workflowId}/dry-runs/`],
    ];
    for (const [path, idField, body, type, apiPath] of jobs) {
      const res = await t.request.post(path).set(bearer(key)).send(body);
      expect(res.status).toBe(201);
      const id: string = res.body.data[idField];
      const jobRun = await runOf(res.body.data.temporal_ui_url);
      expect(jobRun.type).toBe(type);
      expect(await jobRun.staticSummary()).toContain(id);
      expect(await jobRun.staticDetails()).toContain(`(${t.config.BASE_URL}${apiPath}${id})`);
    }
  });
});
