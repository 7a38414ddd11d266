/**
 * What an operator sees in Temporal: the execution id is the workflow id, the custom search
 * attributes find it, and the memo names the workflow.
 */
import { SearchAttributeKeys } from '../../temporal/shared';
import { createActivities } from '../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { startTestWorker, type TestWorker } from '../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from './helpers';

describe('executions in the Temporal UI', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;

  beforeAll(async () => {
    t = await createTestApp();
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
});
