/**
 * Proves the Temporal test harness against the run's shared dev server: a real worker runs
 * the connectivity workflow, our search attributes are registered and queryable, and a
 * worker drains in-flight work on shutdown.
 */
import { randomBytes } from 'node:crypto';
import { TypedSearchAttributes } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { msToTs } from '@temporalio/common/lib/time';
import { connectivityCheckWorkflow } from '../../../temporal/workflows';
import { createConnectivityActivities } from '../../../temporal/activities/connectivity.activities';
import { SEARCH_ATTRIBUTES, SearchAttributeKeys } from '../../../temporal/shared';
import { ensureSearchAttributes } from '../../../src/temporal-search-attributes';
import { connectTestClient, startTestWorker, testRunId, uniqueTaskQueue, TEST_NAMESPACE } from '../../helpers/temporal';
import type { TemporalClient } from '../../../src/temporal-client';

const KEYWORD = encodeSearchAttributeIndexedValueType('KEYWORD');
let temporal: TemporalClient;

beforeAll(async () => {
  temporal = await connectTestClient();
});
afterAll(async () => {
  await temporal.close();
});

const workflowId = (name: string) => `${name}-${testRunId()}-${randomBytes(4).toString('hex')}`;

test('a real worker runs connectivityCheckWorkflow to pong', async () => {
  const taskQueue = uniqueTaskQueue('connectivity');
  const worker = await startTestWorker({ taskQueue, activities: createConnectivityActivities() });
  try {
    const result = await temporal.client.workflow.execute(connectivityCheckWorkflow, {
      taskQueue,
      workflowId: workflowId('connectivity'),
    });
    expect(result).toBe('pong');
  } finally {
    await worker.stop();
  }
});

test('the custom search attributes are registered as Keyword', async () => {
  const { customAttributes } = await temporal.connection.operatorService.listSearchAttributes({
    namespace: TEST_NAMESPACE,
  });
  expect(SEARCH_ATTRIBUTES.map((k) => k.name).sort()).toEqual(
    ['WfaChannel', 'WfaCustomerId', 'WfaExportId', 'WfaOrganizationId', 'WfaReportId', 'WfaTriggerId', 'WfaWorkflowId'],
  );
  for (const { name } of SEARCH_ATTRIBUTES) expect(customAttributes?.[name]).toBe(KEYWORD);
});

test('ensureSearchAttributes registers them on a namespace that lacks them, idempotently', async () => {
  const namespace = `sa-${testRunId()}-${randomBytes(3).toString('hex')}`;
  await temporal.connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  // A namespace registered at run time is not visible to every frontend call at once.
  await eventually(() => ensureSearchAttributes(temporal.connection, namespace));
  await ensureSearchAttributes(temporal.connection, namespace);
  const registered =
    (await temporal.connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  for (const { name } of SEARCH_ATTRIBUTES) expect(registered[name]).toBe(KEYWORD);
});

test('a workflow started with our search attributes is found by a visibility query', async () => {
  const taskQueue = uniqueTaskQueue('search');
  const worker = await startTestWorker({ taskQueue, activities: createConnectivityActivities() });
  const orgId = `org_x_${testRunId()}_${randomBytes(3).toString('hex')}`;
  const id = workflowId('search');
  try {
    await temporal.client.workflow.execute(connectivityCheckWorkflow, {
      taskQueue,
      workflowId: id,
      typedSearchAttributes: new TypedSearchAttributes([
        { key: SearchAttributeKeys.organizationId, value: orgId },
        { key: SearchAttributeKeys.channel, value: 'whatsapp' },
      ]),
    });
  } finally {
    await worker.stop();
  }
  // Visibility is eventually consistent: poll, bounded.
  const found = await eventually(async () => {
    const ids: string[] = [];
    for await (const wf of temporal.client.workflow.list({ query: `WfaOrganizationId = '${orgId}'` })) {
      ids.push(wf.workflowId);
    }
    if (ids.length === 0) throw new Error('not visible yet');
    return ids;
  });
  expect(found).toEqual([id]);
});

test('shutdown drains an in-flight activity and the run promise resolves', async () => {
  const taskQueue = uniqueTaskQueue('drain');
  let entered!: () => void;
  const activityEntered = new Promise<void>((r) => (entered = r));
  let release!: () => void;
  const activityReleased = new Promise<void>((r) => (release = r));
  const first = await startTestWorker({
    taskQueue,
    activities: {
      async ping() {
        entered();
        await activityReleased;
        return 'pong';
      },
    },
  });
  const handle = await temporal.client.workflow.start(connectivityCheckWorkflow, {
    taskQueue,
    workflowId: workflowId('drain'),
  });
  await activityEntered;

  const stopped = first.stop();
  // Shutdown must wait for the activity instead of abandoning it.
  const early = await Promise.race([stopped.then(() => 'stopped'), sleep(300).then(() => 'waiting')]);
  expect(early).toBe('waiting');
  release();
  await expect(stopped).resolves.toBeUndefined();
  await expect(first.done).resolves.toBeUndefined();
  expect(first.worker.getState()).toBe('STOPPED');

  // The drained activity's result was recorded: a second worker only finishes the
  // workflow and never runs ping again.
  let secondPings = 0;
  const second = await startTestWorker({
    taskQueue,
    activities: {
      async ping() {
        secondPings++;
        return createConnectivityActivities().ping();
      },
    },
  });
  try {
    expect(await handle.result()).toBe('pong');
    expect(secondPings).toBe(0);
  } finally {
    await second.stop();
  }
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually<T>(fn: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}
