/** Set-up shared by the inbound message tests. */
import { bearer, type TestApp } from './app';

/** An active WhatsApp workflow "Greeter" (one message node) with a `message` trigger on "hello". */
export async function greeterWithHelloTrigger(t: TestApp, key: string): Promise<{ workflowId: string; triggerId: string }> {
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
  return { workflowId, triggerId: trigger.body.data.id as string };
}
