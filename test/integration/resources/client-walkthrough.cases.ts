/**
 * The README's "The first conversation", run as a user of the generated
 * TypeScript client would (clients/typescript: openapi-typescript types + openapi-fetch)
 * against the running service with a worker, a webhook dispatcher and an HTTPS receiver.
 * No casts: the suite's `tsc --strict` compiles this file against the committed client,
 * so a document change that breaks the walkthrough's types fails `npm test`.
 */
import { createWorkflowClient, type Schemas, type WorkflowClient } from '../../../clients/typescript';
import { waitFor } from '../../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
let api: WorkflowClient;

beforeAll(async () => {
  kit = await startWebhookKit();
  const { key } = await kit.t.createKey('admin');
  api = createWorkflowClient({ baseUrl: kit.t.baseUrl, apiKey: key });
});
afterAll(() => kit.close());

/** The `data` of a successful answer, or a failure that shows the error envelope. */
function ok<T>(result: { data?: T; error?: Schemas['Error']; response: Response }): T {
  if (result.data === undefined) throw new Error(`${result.response.status}: ${JSON.stringify(result.error)}`);
  return result.data;
}

test('a workflow greets a customer, asks for an email, and reports what happened', async () => {
  // A workflow that greets anyone who says "hello", then asks for an email address.
  const workflow = ok(
    await api.POST('/v1/workflows', {
      body: {
        name: 'Greeter',
        channel: 'whatsapp',
        configuration: {
          trigger: { type: 'keyword', keywords: ['hello'] },
          nodes: [
            { id: 'hi', type: 'message', content: 'Hi! How can we help?', next: 'ask' },
            { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', label: 'Your email?' }] },
          ],
        },
      },
    }),
  ).data;
  expect(workflow.status).toBe('draft');
  // What the API defaulted comes back, typed as present: a form field's `required`.
  const params = { path: { workflow_id: workflow.id } };
  const stored = ok(await api.GET('/v1/workflows/{workflow_id}', { params })).data;
  const askNode = stored.configuration?.nodes.find((node) => node.id === 'ask');
  if (askNode?.type !== 'form') throw new Error('the form node is missing from the answer');
  const askField: { name: string; required: boolean } = askNode.fields[0]!;
  expect(askField).toMatchObject({ name: 'email', required: false });
  expect(ok(await api.POST('/v1/workflows/{workflow_id}/activate', { params })).data.status).toBe('active');

  // A message trigger for another keyword, sent without the matching options the API defaults.
  const trigger = ok(
    await api.POST('/v1/triggers', { body: { name: 'Pricing', type: 'message', workflow_id: workflow.id, configuration: { keywords: ['pricing'] } } }),
  ).data;
  if (trigger.type !== 'message') throw new Error(`expected a message trigger, got ${trigger.type}`);
  const matching: { case_sensitive: boolean; exact_match: boolean } = trigger.configuration;
  expect(matching).toMatchObject({ case_sensitive: false, exact_match: false });

  // Be told what happens: signed POSTs to an HTTPS endpoint (here the test's receiver).
  const hook = ok(await api.POST('/v1/webhooks', { body: { url: kit.receiver.url('/hooks'), events: ['workflow.completed', 'message.sent'] } })).data;
  expect(hook.active).toBe(true);

  // A customer writes in; the execution greets them and waits for the form reply.
  const first = ok(await api.POST('/v1/messages', { body: { channel: 'whatsapp', customer_id: '+15550001', message: 'hello' } })).data;
  expect(first.status).toBe('started');
  const listExecutions = async () => ok(await api.GET('/v1/workflows/{workflow_id}/executions', { params })).data;
  const waiting = await waitFor(async () => {
    const [execution] = await listExecutions();
    return execution?.status === 'running' && execution.output?.next_action === 'wait_for_input' ? execution : undefined;
  }, 'the execution to wait for the form reply');
  expect(waiting.id).toBe(first.executions[0]?.id);

  ok(await api.POST('/v1/messages', { body: { channel: 'whatsapp', customer_id: '+15550001', message: 'ada@example.com' } }));
  const done = await waitFor(async () => {
    const [execution] = await listExecutions();
    return execution?.status === 'success' ? execution : undefined;
  }, 'the execution to succeed');
  expect(done.output).toEqual(expect.objectContaining({ next_action: 'end', form_data: { ask: { email: 'ada@example.com' } } }));

  // Every step recorded, typed by node type.
  const detail = ok(await api.GET('/v1/workflows/{workflow_id}/executions/{execution_id}', { params: { path: { workflow_id: workflow.id, execution_id: done.id } } })).data;
  expect(detail.steps.map((step) => [step.node_id, step.type, step.status])).toEqual([
    ['hi', 'message', 'completed'],
    ['ask', 'form', 'completed'],
  ]);
  expect(detail.steps[0]?.output.message_sent).toBe('Hi! How can we help?');
  expect(detail.steps[1]?.output.form_data).toEqual({ email: 'ada@example.com' });

  // And the webhook was told.
  const delivered = (type: string) => kit.receiver.requestsTo('/hooks').some((d) => d.body.includes(`"type":"${type}"`)) || undefined;
  await waitFor(async () => delivered('message.sent'), 'message.sent to be delivered');
  await waitFor(async () => delivered('workflow.completed'), 'workflow.completed to be delivered');
});
