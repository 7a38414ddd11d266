/** Set-up shared by the inbound message tests. */
import { bearer, createTestApp, type TestApp } from './app';

export interface InboundTestApp {
  t: TestApp;
  /** An admin key of `org`. */
  key: string;
  org: string;
  /** An active WhatsApp workflow "Greeter" (one message node)… */
  workflowId: string;
  /** …and its `message` trigger on "hello". */
  triggerId: string;
}

/** A test app with limits high enough for bursts of messages, an admin key, and the greeter workflow with its trigger. */
export async function inboundTestApp(): Promise<InboundTestApp> {
  const t = await createTestApp({ RATE_LIMIT_CREDENTIAL_PER_HOUR: '100000', RATE_LIMIT_RESOURCE_WRITE_PER_HOUR: '100000' });
  const { key, organizationId: org } = await t.createKey('admin');
  const wf = await t.request
    .post('/v1/workflows')
    .set(bearer(key))
    .send({ name: 'Greeter', channel: 'whatsapp', configuration: { nodes: [{ id: 'n1', type: 'message', content: 'Hi' }] } });
  const workflowId = wf.body.data.id as string;
  expect((await t.request.post(`/v1/workflows/${workflowId}/activate`).set(bearer(key))).status).toBe(200);
  const trigger = await t.request
    .post('/v1/triggers')
    .set(bearer(key))
    .send({ name: 'hello', type: 'message', workflow_id: workflowId, channel: 'whatsapp', configuration: { keywords: ['hello'] } });
  expect(trigger.status).toBe(201);
  return { t, key, org, workflowId, triggerId: trigger.body.data.id as string };
}
