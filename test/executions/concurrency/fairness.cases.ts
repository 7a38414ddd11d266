/**
 * Fair sharing between organizations (temporal/fairness.shared.ts), against the real API,
 * PostgreSQL and Temporal: every execution's run carries its organization's id as the
 * task-queue fairness key, whether the API started it or the reconciler did, so a
 * backlogged queue dispatches organizations' tasks round-robin; and a run started while its
 * organization's starts queued in the API carries the lower priority, so other
 * organizations' runs go first. (What that does to latency under a flood is measured by
 * `npm run bench -- fairness`, not here.)
 */
import { BACKLOGGED_PRIORITY_KEY } from '../../../temporal/fairness.shared';
import { reconcileStarts } from '../../../src/modules/starts/durable-start';
import { EXECUTION_START } from '../../../src/modules/executions/execution.starter';
import { ApiKeyService } from '../../../src/modules/api-keys/api-key.service';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { createActiveWorkflow, waitFor } from '../helpers';

describe('fair sharing between organizations', () => {
  let t: TestApp;
  let lost: TestApp;
  /** One Temporal call at a time: a burst of one organization's messages queues its starts. */
  let narrow: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
    // Its starts are lost (no such namespace): the reconciler starts them.
    lost = await createTestApp({ DATABASE_URL: t.databaseUrl, TEMPORAL_NAMESPACE: 'wfa-test-nowhere' });
    narrow = await createTestApp({ DATABASE_URL: t.databaseUrl, BACKGROUND_CALLS_IN_FLIGHT: '1' });
  });
  afterAll(async () => {
    await narrow.close();
    await lost.close();
    await t.close();
  });

  it("a burst's runs started while more of its organization's starts queued yield (priority 4); another organization's lone run does not", async () => {
    const orgs = new ApiKeyService(t.services.orm.em.fork());
    const [burst, lone] = [
      await t.createKey('admin', (await orgs.ensureOrganization('fairness-burst')).id),
      await t.createKey('admin', (await orgs.ensureOrganization('fairness-lone')).id),
    ];
    const greeter = { name: 'Greeter', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'hello', type: 'message', content: 'Hello!' }] } };
    await createActiveWorkflow(narrow, burst.key, greeter);
    await createActiveWorkflow(narrow, lone.key, greeter);
    const post = async (key: string, customer: string) => {
      const res = await narrow.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: 'hi' }).expect(201);
      return res.body.data.executions[0].id as string;
    };
    const burstRuns = await Promise.all(Array.from({ length: 8 }, (_, i) => post(burst.key, `burst-${i}`)));
    const priorityOf = async (executionId: string) => {
      const handle = narrow.services.temporal.client.workflow.getHandle(executionId);
      const described = await waitFor(() => handle.describe(), `the run of ${executionId}`);
      await handle.terminate('test over');
      return described.priority;
    };
    const burstPriorities = await Promise.all(burstRuns.map(priorityOf));
    expect(burstPriorities.every((p) => p?.fairnessKey === burst.organizationId)).toBe(true);
    // The first start runs at once; those given the slot while others of the burst still waited yield.
    expect(burstPriorities.filter((p) => p?.priorityKey === BACKLOGGED_PRIORITY_KEY).length).toBeGreaterThan(0);
    const lonePriority = await priorityOf(await post(lone.key, 'lone-1'));
    expect(lonePriority).toMatchObject({ fairnessKey: lone.organizationId });
    expect(lonePriority?.priorityKey ?? 0).not.toBe(BACKLOGGED_PRIORITY_KEY);
  });

  it("each organization's runs carry its own fairness key, from the API's start and from the reconciler's", async () => {
    const other = await new ApiKeyService(t.services.orm.em.fork()).ensureOrganization('fairness-other');
    const orgs = [await t.createKey('admin'), await t.createKey('admin', other.id)];
    const runs: Array<{ executionId: string; organizationId: string }> = [];
    for (const { key, organizationId } of orgs) {
      await createActiveWorkflow(t, key, {
        name: 'Greeter',
        channel: 'whatsapp',
        configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'hello', type: 'message', content: 'Hello!' }] },
      });
      for (const app of [t, lost]) {
        const res = await app.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: `c-${runs.length}`, message: 'hi' }).expect(201);
        runs.push({ executionId: res.body.data.executions[0].id as string, organizationId });
      }
    }
    // At least the two lost starts (an API start whose stamp is still batched may count too).
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBeGreaterThanOrEqual(2);

    for (const { executionId, organizationId } of runs) {
      const handle = t.services.temporal.client.workflow.getHandle(executionId);
      const described = await waitFor(() => handle.describe(), `the run of ${executionId}`);
      expect(described.priority).toMatchObject({ fairnessKey: organizationId });
      await handle.terminate('test over');
    }
    expect(new Set(runs.map((r) => r.organizationId)).size).toBe(2);
  });

  it("the reconciler's starts of an organization's lost backlog yield from its third row in a pass on; another organization's lone row does not", async () => {
    const orgs = new ApiKeyService(t.services.orm.em.fork());
    const [flood, lone] = [
      await t.createKey('admin', (await orgs.ensureOrganization('fairness-lost-flood')).id),
      await t.createKey('admin', (await orgs.ensureOrganization('fairness-lost-lone')).id),
    ];
    const greeter = { name: 'Greeter', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'hello', type: 'message', content: 'Hello!' }] } };
    await createActiveWorkflow(t, flood.key, greeter);
    await createActiveWorkflow(t, lone.key, greeter);
    // Their starts are lost, one at a time so the rows' order is the posts' order.
    const lostRun = async (key: string, customer: string) => {
      const res = await lost.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: 'hi' }).expect(201);
      return res.body.data.executions[0].id as string;
    };
    const floodRuns: string[] = [];
    for (let i = 0; i < 4; i++) floodRuns.push(await lostRun(flood.key, `lost-flood-${i}`));
    const loneRun = await lostRun(lone.key, 'lost-lone');

    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBeGreaterThanOrEqual(5);
    const priorityOf = async (executionId: string) => {
      const handle = t.services.temporal.client.workflow.getHandle(executionId);
      const described = await waitFor(() => handle.describe(), `the run of ${executionId}`);
      await handle.terminate('test over');
      return described.priority;
    };
    // Temporal describes an unset priority key as 0 or leaves it out: both are the default (3).
    const keyOf = (p: { priorityKey?: number } | undefined) => (p?.priorityKey ? p.priorityKey : 'default');
    // The pass takes the organizations in turn, each one's oldest first: the flood's first
    // two rows start at the default priority, its third and fourth yield.
    const floodPriorities = [];
    for (const id of floodRuns) floodPriorities.push(await priorityOf(id));
    expect(floodPriorities.map(keyOf)).toEqual(['default', 'default', BACKLOGGED_PRIORITY_KEY, BACKLOGGED_PRIORITY_KEY]);
    expect(floodPriorities.every((p) => p?.fairnessKey === flood.organizationId)).toBe(true);
    const lonePriority = await priorityOf(loneRun);
    expect(lonePriority).toMatchObject({ fairnessKey: lone.organizationId });
    expect(keyOf(lonePriority)).toBe('default');
  });
});
