/**
 * Dry runs through the HTTP API with a real worker, the HTTP channel adapter against a
 * local provider server and a real webhook receiver: a recorded form conversation replayed
 * against a draft that changes a message and a form field shows exactly those changes, and
 * nothing is sent, emitted or counted; saved revisions, a stricter form, validation and
 * tenancy.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { EVENT_TYPES } from '../../../src/modules/events/event.entity';
import { createActivities } from '../../../temporal/activities';
import { bearer } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';
import { waitFor } from '../../helpers/wait';
import { createActiveWorkflow, waitForExecution } from '../../executions/helpers';

const ORDER = {
  trigger: { type: 'keyword', keywords: ['order'] },
  nodes: [
    { id: 'hi', type: 'message', content: 'Thanks for your order!', next: 'ask' },
    {
      id: 'ask',
      type: 'form',
      fields: [
        { name: 'name', type: 'text', required: true, label: 'Your name?' },
        { name: 'email', type: 'email', required: true, label: 'Your email?' },
      ],
      next: 'bye',
    },
    { id: 'bye', type: 'message', content: 'We will write to you.' },
  ],
};

/** ORDER with the greeting's text and the email field replaced. */
const draftOf = (greeting: string, email: Record<string, unknown>) => ({
  ...ORDER,
  nodes: [
    { ...ORDER.nodes[0], content: greeting },
    { ...ORDER.nodes[1], fields: [ORDER.nodes[1]!.fields![0], { ...ORDER.nodes[1]!.fields![1], ...email }] },
    ORDER.nodes[2],
  ],
});

describe('dry runs', () => {
  let kit: WebhookKit;
  let provider: ChannelProvider;
  let orgId: string;
  let auth: Record<string, string>;
  let workflowId: string;
  let executionId: string;

  const t = () => kit.t;
  const createDryRun = (body: object, a = auth, wf = workflowId) => t().request.post(`/v1/workflows/${wf}/dry-runs`).set(a).send(body);
  const completed = (id: string, a = auth) =>
    waitFor(
      async () => {
        const res = await t().request.get(`/v1/workflows/${workflowId}/dry-runs/${id}`).set(a);
        return res.status === 200 && res.body.data.status === 'completed' ? res.body.data : undefined;
      },
      `dry run ${id} to complete`,
      60_000,
    );

  /** Everything a dry run must leave alone, for this organization. */
  async function sideEffects() {
    const count = async (sql: string) => (await t().query<{ n: string }>(sql, [orgId]))[0]!.n;
    return {
      events: await count('select count(*)::text as n from events where organization_id = ?'),
      undispatched: await count('select count(*)::text as n from events where organization_id = ? and dispatched_at is null'),
      executions: await count('select count(*)::text as n from executions where organization_id = ?'),
      steps: await count('select count(*)::text as n from execution_steps where organization_id = ?'),
      messages: await count('select count(*)::text as n from messages where organization_id = ?'),
      customers: await count(`select coalesce(sum(message_count), 0)::text as n from customers where organization_id = ?`),
      counters: await count(`select string_agg(execution_count || '/' || success_count || '/' || failure_count, ',') as n from workflows where organization_id = ?`),
      analyticsHourly: await count(`select coalesce(jsonb_agg(to_jsonb(a) order by a), '[]')::text as n from analytics_hourly a where organization_id = ?`),
      analyticsNodes: await count(`select coalesce(jsonb_agg(to_jsonb(a) order by a), '[]')::text as n from analytics_node_hourly a where organization_id = ?`),
      analyticsCustomers: await count(`select coalesce(jsonb_agg(to_jsonb(a) order by a), '[]')::text as n from analytics_customer_days a where organization_id = ?`),
      webhookLogs: await count('select count(*)::text as n from webhook_logs l join webhooks w on w.id = l.webhook_id where w.organization_id = ?'),
      sentToProvider: String(provider.received.length),
      webhookRequests: String(kit.receiver.requests.length),
    };
  }

  beforeAll(async () => {
    provider = await startChannelProvider();
    kit = await startWebhookKit({ CHANNEL_PROVIDER_URL: provider.url });
    ({ orgId, auth } = await kit.tenant());
    await kit.createHook(auth, '/hooks', { events: [...EVENT_TYPES] });
    workflowId = await createActiveWorkflow(t(), auth.Authorization!.slice('Bearer '.length), { name: 'Orders', channel: 'whatsapp', configuration: ORDER });

    // The recorded conversation: started by "order", the form answered by two replies.
    const say = async (message: string) => {
      const res = await t().request.post('/v1/messages').set(auth).send({ channel: 'whatsapp', customer_id: '+15550100', message });
      expect(res.status).toBe(201);
      return res.body.data;
    };
    const key = auth.Authorization!.slice('Bearer '.length);
    executionId = (await say('order')).executions[0].id;
    await waitForExecution(t(), key, workflowId, executionId, (e) => e.output?.field === 'name');
    await say('Ada');
    await waitForExecution(t(), key, workflowId, executionId, (e) => e.output?.field === 'email');
    await say('ada@example.com');
    await waitForExecution(t(), key, workflowId, executionId, 'success');
    // Everything the conversation caused has been sent and delivered before anything is measured.
    await waitFor(async () => {
      const s = await sideEffects();
      return s.undispatched === '0' && s.webhookLogs === s.events && Number(s.webhookRequests) >= Number(s.events) ? true : undefined;
    }, 'the conversation to be delivered');
    expect(provider.received.map((m) => m.text)).toEqual(['Thanks for your order!', 'Your name?', 'Your email?', 'We will write to you.']);
  });
  afterAll(async () => {
    await kit.close();
    await provider.close();
  });

  it('a draft changing a message and a form field: the diff shows exactly those changes; nothing is sent, emitted or counted', async () => {
    const before = await sideEffects();
    const draft = draftOf('Thank you for ordering!', { label: 'Where should we send the receipt?' });
    const res = await createDryRun({ execution_ids: [executionId], revision: 'draft', configuration: draft });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ id: expect.stringMatching(/^dry_/), workflow_id: workflowId, revision: 'draft', executions: 1, configuration: draft });
    expect(['pending', 'running', 'completed']).toContain(res.body.data.status);

    const done = await completed(res.body.data.id);
    expect(done).toMatchObject({ status: 'completed', executions: 1, completed: 1, diverged: 1, error: null });
    const [item] = done.items;
    expect(item).toMatchObject({
      execution_id: executionId,
      status: 'success',
      error: null,
      original: { status: 'success', revision: 1 },
      replies: [{ text: 'Ada' }, { text: 'ada@example.com' }],
    });
    const { diff } = item;
    expect(diff.identical).toBe(false);
    expect(diff.first_divergence).toEqual({ index: 0, node_id: 'hi', changes: ['step.input.content', 'step.output.message_sent', 'messages'] });
    // Exactly two changes: the greeting (its step and message) and the email prompt; the answers are the same.
    expect(diff.nodes.map((n: any) => [n.original.node_id, n.dry_run.node_id, n.changes])).toEqual([
      ['hi', 'hi', ['step.input.content', 'step.output.message_sent', 'messages']],
      ['ask', 'ask', ['messages']],
      ['bye', 'bye', []],
    ]);
    const [hi, ask] = diff.nodes;
    expect(hi.original.messages).toEqual(['Thanks for your order!']);
    expect(hi.dry_run.messages).toEqual(['Thank you for ordering!']);
    expect(hi.dry_run.step).toMatchObject({ status: 'completed', output: { message_sent: 'Thank you for ordering!' } });
    expect(ask.original.messages).toEqual(['Your name?', 'Your email?']);
    expect(ask.dry_run.messages).toEqual(['Your name?', 'Where should we send the receipt?']);
    expect(ask.dry_run.step.output).toEqual({ form_data: { name: 'Ada', email: 'ada@example.com' } });
    expect(ask.dry_run.step.output).toEqual(ask.original.step.output);

    // Nothing reached the provider or the webhook receiver; no row that feeds events, metrics or analytics was written.
    expect(await sideEffects()).toEqual(before);
    // The original execution is untouched.
    const original = await t().request.get(`/v1/workflows/${workflowId}/executions/${executionId}`).set(auth);
    expect(original.body.data.steps.map((s: any) => s.output.message_sent ?? s.output.form_data)).toEqual([
      'Thanks for your order!',
      { name: 'Ada', email: 'ada@example.com' },
      'We will write to you.',
    ]);
  });

  it('a saved revision replays identically; a stricter form field shows the form outcome the draft would give', async () => {
    const before = await sideEffects();
    const same = await createDryRun({ filter: { status: 'success' }, revision: 1 });
    expect(same.status).toBe(201);
    const sameDone = await completed(same.body.data.id);
    expect(sameDone).toMatchObject({ revision: 1, executions: 1, diverged: 0, configuration: ORDER });
    expect(sameDone.items[0]).toMatchObject({ status: 'success', diff: { identical: true, first_divergence: null } });

    // The email field now wants a phone number: the recorded email is refused, re-asked, and the replies run out.
    const strict = await createDryRun({ execution_ids: [executionId], configuration: draftOf('Thanks for your order!', { type: 'phone', label: 'Your phone?' }) });
    const strictDone = await completed(strict.body.data.id);
    const [item] = strictDone.items;
    expect(item).toMatchObject({ status: 'waiting_for_input', output: { next_action: 'wait_for_input', node_id: 'ask', field: 'email' } });
    expect(item.diff.first_divergence).toEqual({ index: 1, node_id: 'ask', changes: ['step', 'messages'] });
    expect(item.diff.nodes[1].dry_run).toEqual({
      node_id: 'ask',
      step: null,
      messages: ['Your name?', 'Your phone?', 'That does not look like a phone number. Your phone?'],
    });
    expect(item.diff.nodes[2]).toMatchObject({ original: { node_id: 'bye' }, dry_run: null, changes: ['visit'] });
    expect(await sideEffects()).toEqual(before);

    const list = await t().request.get(`/v1/workflows/${workflowId}/dry-runs?status=completed&limit=2`).set(auth);
    expect(list.status).toBe(200);
    expect(list.body.data.map((d: any) => d.id)).toEqual([strict.body.data.id, same.body.data.id]);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 2, total: 3 });
  });

  it('the mode is enforced where the activities are built: live activities refuse a dry-run context, dry-run ones a live context', async () => {
    const before = await sideEffects();
    const activities = createActivities({ services: t().services });
    const ctx = { executionId, organizationId: orgId, workflowId, channel: 'whatsapp', customerId: null };
    const input = { node: { id: 'late', type: 'message' as const, content: 'Should never be sent' }, startedAt: Date.now() };
    const refused = { type: 'ExecutionValidationError', nonRetryable: true };
    await expect(new MockActivityEnvironment().run(activities.runMessageNode, { ...input, ctx: { ...ctx, dryRunId: 'dry_x' } })).rejects.toMatchObject(refused);
    await expect(new MockActivityEnvironment().run(activities.dryRun_runMessageNode, { ...input, ctx })).rejects.toMatchObject(refused);
    expect(await sideEffects()).toEqual(before);
  });

  it('refuses bad input with a clear 4xx and records nothing; other organizations see nothing', async () => {
    const other = await createActiveWorkflow(t(), auth.Authorization!.slice('Bearer '.length), {
      name: 'Other',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['other'] }, nodes: [{ id: 'm', type: 'message', content: 'Other' }] },
    });
    const otherRun = await t().request.post('/v1/messages').set(auth).send({ channel: 'whatsapp', customer_id: '+15550101', message: 'other' });
    const otherExecution = otherRun.body.data.executions[0].id as string;
    const stranger = await kit.tenant();
    const dryRunsBefore = await t().query('select id from dry_runs');

    const refused: Array<[object, number, string, string?]> = [
      [{ execution_ids: ['exec_unknown'] }, 404, 'EXECUTION_NOT_FOUND', 'execution_ids'],
      [{ execution_ids: [executionId, otherExecution] }, 400, 'INVALID_REQUEST', 'execution_ids'],
      [{ execution_ids: Array.from({ length: 101 }, (_, i) => `exec_${i}`) }, 400, 'INVALID_REQUEST', 'execution_ids'],
      [{}, 400, 'INVALID_REQUEST', 'execution_ids'],
      [{ execution_ids: [executionId], filter: {} }, 400, 'INVALID_REQUEST', 'filter'],
      [{ filter: { status: 'cancelled' } }, 400, 'INVALID_REQUEST', 'filter'],
      [{ filter: { start_date: '2026-02-01', end_date: '2026-01-01' } }, 400, 'INVALID_DATE_RANGE', 'filter.end_date'],
      [{ execution_ids: [executionId], revision: 99 }, 404, 'REVISION_NOT_FOUND', 'revision'],
      [{ execution_ids: [executionId], revision: 0 }, 400, 'INVALID_REQUEST', 'revision'],
      [{ execution_ids: [executionId], revision: 1, configuration: ORDER }, 400, 'INVALID_REQUEST', 'configuration'],
      // The same configuration errors as a workflow update.
      [{ execution_ids: [executionId], configuration: { nodes: [] } }, 400, 'INVALID_WORKFLOW_CONFIG', 'configuration.nodes'],
      [{ execution_ids: [executionId], configuration: { nodes: [{ id: 'm', type: 'message' }] } }, 422, 'INVALID_NODE_CONFIG', 'configuration.nodes[0].content'],
      [{ execution_ids: [executionId], configuration: { nodes: [{ id: 'm', type: 'message', content: 'x', next: 'nowhere' }] } }, 400, 'INVALID_WORKFLOW_CONFIG', 'configuration.nodes[0].next'],
      [{ execution_ids: [executionId], surprise: true }, 400, 'INVALID_REQUEST', 'surprise'],
    ];
    for (const [body, status, code, field] of refused) {
      const res = await createDryRun(body);
      expect([JSON.stringify(body).slice(0, 60), res.status, res.body.error?.code, res.body.error?.field]).toEqual([JSON.stringify(body).slice(0, 60), status, code, field]);
    }
    // The update endpoint answers the same configuration errors.
    const update = await t().request.put(`/v1/workflows/${workflowId}`).set(auth).send({ configuration: { nodes: [{ id: 'm', type: 'message' }] } });
    expect([update.status, update.body.error.code, update.body.error.field]).toEqual([422, 'INVALID_NODE_CONFIG', 'configuration.nodes[0].content']);

    // Another organization: its key sees neither the workflow, the execution nor the dry runs.
    const mine = (await t().query<{ id: string }>('select id from dry_runs where workflow_id = ? limit 1', [workflowId]))[0]!.id;
    expect((await createDryRun({ execution_ids: [executionId] }, stranger.auth)).body.error.code).toBe('WORKFLOW_NOT_FOUND');
    expect((await t().request.get(`/v1/workflows/${workflowId}/dry-runs/${mine}`).set(stranger.auth)).status).toBe(404);
    expect((await t().request.get(`/v1/workflows/${workflowId}/dry-runs`).set(stranger.auth)).status).toBe(404);
    const strangerWf = await createActiveWorkflow(t(), stranger.auth.Authorization!.slice('Bearer '.length), { name: 'S', channel: 'whatsapp', configuration: ORDER });
    const foreign = await createDryRun({ execution_ids: [executionId] }, stranger.auth, strangerWf);
    expect([foreign.status, foreign.body.error.code, foreign.body.error.field]).toEqual([404, 'EXECUTION_NOT_FOUND', 'execution_ids']);
    const wrongPath = await t().request.get(`/v1/workflows/${other}/dry-runs/${mine}`).set(auth);
    expect([wrongPath.status, wrongPath.body.error.code]).toEqual([404, 'DRY_RUN_NOT_FOUND']);

    // Scopes: a read key reads but cannot create.
    const { key: reader } = await t().createKey('read', orgId);
    expect((await createDryRun({ execution_ids: [executionId] }, bearer(reader))).status).toBe(403);
    expect((await t().request.get(`/v1/workflows/${workflowId}/dry-runs/${mine}`).set(bearer(reader))).status).toBe(200);

    expect(await t().query('select id from dry_runs')).toEqual(dryRunsBefore);
  });
});
