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

  const greeter = { name: 'Greeter', channel: 'whatsapp', configuration: { trigger: { type: 'keyword', keywords: ['hi'] }, nodes: [{ id: 'hello', type: 'message', content: 'Hello!' }] } };
  /** Two new organizations, each with an admin key and an active greeter (`hi`). */
  const twoOrganizations = async (names: [string, string]) => {
    const orgs = new ApiKeyService(t.services.orm.em.fork());
    const keys = [];
    for (const name of names) {
      const created = await t.createKey('admin', (await orgs.ensureOrganization(name)).id);
      await createActiveWorkflow(t, created.key, greeter);
      keys.push(created);
    }
    return keys as [(typeof keys)[0], (typeof keys)[0]];
  };
  /** `app`'s POST of `hi`: the execution's id. */
  const post = async (app: TestApp, key: string, customer: string) => {
    const res = await app.request.post('/v1/messages').set(bearer(key)).send({ channel: 'whatsapp', customer_id: customer, message: 'hi' }).expect(201);
    return res.body.data.executions[0].id as string;
  };
  /** The run's Temporal priority (then the run is ended). */
  const priorityOf = async (executionId: string) => {
    const handle = t.services.temporal.client.workflow.getHandle(executionId);
    const described = await waitFor(() => handle.describe(), `the run of ${executionId}`);
    await handle.terminate('test over');
    return described.priority;
  };
  // Temporal describes an unset priority key as 0 or leaves it out: both are the default (3).
  const keyOf = (p: { priorityKey?: number } | undefined) => (p?.priorityKey ? p.priorityKey : 'default');

  it("a burst's runs started while more of its organization's starts queued yield (priority 4); another organization's lone run does not", async () => {
    const [burst, lone] = await twoOrganizations(['fairness-burst', 'fairness-lone']);
    const burstRuns = await Promise.all(Array.from({ length: 8 }, (_, i) => post(narrow, burst.key, `burst-${i}`)));
    const burstPriorities = await Promise.all(burstRuns.map(priorityOf));
    expect(burstPriorities.every((p) => p?.fairnessKey === burst.organizationId)).toBe(true);
    // The first start runs at once; those given the slot while others of the burst still waited yield.
    expect(burstPriorities.filter((p) => p?.priorityKey === BACKLOGGED_PRIORITY_KEY).length).toBeGreaterThan(0);
    const lonePriority = await priorityOf(await post(narrow, lone.key, 'lone-1'));
    expect(lonePriority).toMatchObject({ fairnessKey: lone.organizationId });
    expect(keyOf(lonePriority)).toBe('default');
  });

  it("each organization's runs carry its own fairness key, from the API's start and from the reconciler's", async () => {
    const runs: Array<{ executionId: string; organizationId: string }> = [];
    for (const { key, organizationId } of await twoOrganizations(['fairness-one', 'fairness-other'])) {
      for (const app of [t, lost]) runs.push({ executionId: await post(app, key, `c-${runs.length}`), organizationId });
    }
    // At least the two lost starts (an API start whose stamp is still batched may count too).
    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBeGreaterThanOrEqual(2);
    for (const { executionId, organizationId } of runs) expect(await priorityOf(executionId)).toMatchObject({ fairnessKey: organizationId });
    expect(new Set(runs.map((r) => r.organizationId)).size).toBe(2);
  });

  it("the reconciler's starts of an organization's lost backlog yield from its third row in a pass on; another organization's lone row does not", async () => {
    const [flood, lone] = await twoOrganizations(['fairness-lost-flood', 'fairness-lost-lone']);
    // Their starts are lost, one at a time so the rows' order is the posts' order.
    const floodRuns: string[] = [];
    for (let i = 0; i < 4; i++) floodRuns.push(await post(lost, flood.key, `lost-flood-${i}`));
    const loneRun = await post(lost, lone.key, 'lost-lone');

    expect(await reconcileStarts(t.services, EXECUTION_START, { graceMs: 0 })).toBeGreaterThanOrEqual(5);
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
