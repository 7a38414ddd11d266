/**
 * The event catalog (GET /v1/webhooks/event-types): every event type with a description and
 * the JSON Schema of its `data`, and those schemas validate real deliveries: a customer
 * message runs a real workflow, whose events reach a real HTTPS receiver.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { EVENT_TYPES } from '../../../src/modules/events/event.entity';
import { createActiveWorkflow } from '../../executions/helpers';
import { waitFor } from '../../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../../helpers/webhooks';

let kit: WebhookKit;
beforeAll(async () => {
  kit = await startWebhookKit();
});
afterAll(async () => {
  await kit?.close();
});

const CONTRACT_EVENTS = [
  'workflow.started',
  'workflow.completed',
  'workflow.failed',
  'message.received',
  'message.sent',
  'trigger.activated',
  'customer.created',
  'customer.updated',
];

test('the catalog lists every event type with a description and a JSON Schema; the schemas validate real deliveries', async () => {
  const { orgId, auth } = await kit.tenant();
  const res = await kit.t.request.get('/v1/webhooks/event-types').set(auth);
  expect(res.status).toBe(200);
  const catalog = res.body.data as Array<{ type: string; description: string; data_schema: Record<string, unknown> }>;
  expect(catalog.map((e) => e.type)).toEqual([...EVENT_TYPES]);
  expect(catalog.map((e) => e.type)).toEqual(expect.arrayContaining(CONTRACT_EVENTS));
  const ajv = new Ajv2020({ allErrors: true });
  addFormats(ajv);
  const validators = new Map(catalog.map((e) => [e.type, ajv.compile(e.data_schema)]));
  for (const e of catalog) {
    expect(e.description.length).toBeGreaterThan(10);
    expect(e.data_schema).toMatchObject({ type: 'object', properties: expect.any(Object) });
  }

  await kit.createHook(auth, '/catalog', { events: [...EVENT_TYPES] });
  const { key } = await kit.t.createKey('admin', orgId);
  const workflowId = await createActiveWorkflow(kit.t, key, {
    name: 'Greeter',
    channel: 'whatsapp',
    configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'welcome', type: 'message', content: 'Hi!' }] },
  });
  const sent = await kit.t.request
    .post('/v1/messages')
    .set(auth)
    .send({ channel: 'whatsapp', customer_id: '+15550001', message: 'hello', customer: { name: 'Ada' } });
  expect(sent.status).toBe(201);
  const expected = ['message.received', 'customer.created', 'workflow.started', 'message.sent', 'workflow.completed'];
  const bodies = await waitFor(async () => {
    const got = kit.receiver.requestsTo('/catalog').map((r) => JSON.parse(r.body));
    return expected.every((t) => got.some((b) => b.type === t)) ? got : undefined;
  }, 'the workflow events to be delivered');
  for (const body of bodies) {
    const validate = validators.get(body.type)!;
    expect({ type: body.type, valid: validate(body.data), errors: validate.errors ?? null }).toEqual({ type: body.type, valid: true, errors: null });
  }
  const completed = bodies.find((b) => b.type === 'workflow.completed')!;
  expect(completed.data.workflow_id).toBe(workflowId);
  // The schemas can fail: a wrong status or a missing field is refused.
  expect(validators.get('workflow.completed')!({ ...completed.data, status: 'exploded' })).toBe(false);
  const { execution_id: _dropped, ...missing } = completed.data;
  expect(validators.get('workflow.completed')!(missing)).toBe(false);
});

test('the catalog needs webhooks:read', async () => {
  const res = await kit.t.request.get('/v1/webhooks/event-types');
  expect(res.status).toBe(401);
});
