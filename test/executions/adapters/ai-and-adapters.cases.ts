/**
 * ai_response against real knowledge bases (PostgreSQL full-text search), the fallback
 * below the threshold, the OpenAI-compatible rewrite and the HTTP channel adapter, both
 * against real local HTTP servers.
 */
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { type FakeHttpServer, startFakeHttpServer } from '../../helpers/fake-http-server';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitForExecution } from '../helpers';

describe('ai_response and channel adapters', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let provider: ChannelProvider;
  /** An OpenAI-compatible model server. */
  let model: FakeHttpServer;

  beforeAll(async () => {
    provider = await startChannelProvider();
    model = await startFakeHttpServer();
    model.setDefault((r) => ({
      status: 200,
      body: { choices: [{ message: { role: 'assistant', content: `Rewritten: ${r.json.messages[1].content.includes('Settings') ? 'go to Settings' : '?'}` } }] },
    }));
    t = await createTestApp({ CHANNEL_PROVIDER_URL: provider.url, AI_MODEL_URL: `${model.url}/v1`, AI_MODEL_NAME: 'test-model' });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await provider.close();
    await model.close();
  });

  const send = (body: object) => t.request.post('/v1/messages').set(bearer(key)).send(body);

  async function knowledgeBase() {
    const kb = await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Help center', description: 'FAQ' });
    expect(kb.status).toBe(201);
    const article = await t.request
      .post(`/v1/knowledge-bases/${kb.body.data.id}/articles`)
      .set(bearer(key))
      .send({ title: 'Reset your password', content: 'To reset your password open Settings, choose Security and press Reset password.' });
    expect(article.status).toBe(201);
    await t.request
      .post(`/v1/knowledge-bases/${kb.body.data.id}/articles`)
      .set(bearer(key))
      .send({ title: 'Shipping times', content: 'Orders ship within two business days.' });
    const got = await t.request.get(`/v1/knowledge-bases/${kb.body.data.id}`).set(bearer(key));
    expect(got.body.data).toMatchObject({ name: 'Help center', article_count: 2 });
    const dup = await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Help center' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('KNOWLEDGE_BASE_ALREADY_EXISTS');
    return kb.body.data.id as string;
  }

  it('answers from the knowledge base with a confidence, rewritten by the model, delivered through the HTTP adapter', async () => {
    const kbId = await knowledgeBase();
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Support bot',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['password', 'weather'] },
        nodes: [{ id: 'answer', type: 'ai_response', knowledge_base: kbId, confidence_threshold: 0.6, fallback: 'Let me get a human.' }],
      },
    });
    const res = await send({ channel: 'whatsapp', customer_id: '+15551234', message: 'How do I reset my password?' });
    const executionId = res.body.data.executions[0].id;
    const done = await waitForExecution(t, key, workflowId, executionId, 'success');
    expect(done.steps[0]).toMatchObject({
      node_id: 'answer',
      type: 'ai_response',
      status: 'completed',
      input: { question: 'How do I reset my password?', knowledge_base: kbId },
      output: { response: 'Rewritten: go to Settings', confidence: 1, fallback_used: false, model_used: true },
    });
    expect(model.arrived[0]).toMatchObject({ path: '/v1/chat/completions', json: { model: 'test-model' } });

    // The HTTP adapter posted the answer with an idempotency key; the transcript has it too.
    const posted = provider.received.find((r) => r.message.execution_id === executionId)!;
    expect(posted.message).toMatchObject({ channel: 'whatsapp', to: '+15551234', text: 'Rewritten: go to Settings', node_id: 'answer' });
    expect(posted.headers['idempotency-key']).toBe(`${executionId}:answer`);

    // Below the threshold: the node's fallback, and no model call.
    const calls = model.arrived.length;
    const low = await send({ channel: 'whatsapp', customer_id: '+15551234', message: 'What is the weather like?' });
    const lowDone = await waitForExecution(t, key, workflowId, low.body.data.executions[0].id, 'success');
    expect(lowDone.steps[0].output).toMatchObject({ response: 'Let me get a human.', confidence: 0, fallback_used: true });
    expect(model.arrived.length).toBe(calls);
  });

  it('a provider that refuses the message fails the execution with api_error; a missing knowledge base is validation_error', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Refused',
      channel: 'instagram',
      configuration: { trigger: { type: 'keyword', keywords: ['refuse'] }, nodes: [{ id: 'm', type: 'message', content: 'hi' }] },
    });
    provider.answerAll(400);
    try {
      const res = await send({ channel: 'instagram', customer_id: 'u1', message: 'refuse me' });
      const failed = await waitForExecution(t, key, workflowId, res.body.data.executions[0].id, 'failed');
      expect(failed.error).toEqual({ type: 'api_error', message: expect.stringContaining('400') });
      expect(failed.steps).toEqual([expect.objectContaining({ node_id: 'm', status: 'failed' })]);
    } finally {
      provider.answerAll(200);
    }

    const noKb = await createActiveWorkflow(t, key, {
      name: 'No KB',
      channel: 'voice',
      configuration: { trigger: { type: 'keyword', keywords: ['question'] }, nodes: [{ id: 'a', type: 'ai_response', knowledge_base: 'kb_missing' }] },
    });
    const res2 = await send({ channel: 'voice', customer_id: 'u2', message: 'a question' });
    const failed2 = await waitForExecution(t, key, noKb, res2.body.data.executions[0].id, 'failed');
    expect(failed2.error.type).toBe('validation_error');
  });

  it('metrics count executions, messages, customers and channels, bucketed by granularity', async () => {
    const workflowId = await createActiveWorkflow(t, key, {
      name: 'Metrics',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['metrics'] }, nodes: [{ id: 'm', type: 'message', content: 'counted' }] },
    });
    const startedAt: string[] = [];
    for (const c of ['a', 'b', 'a']) {
      const res = await send({ channel: 'whatsapp', customer_id: `m-${c}`, message: 'metrics please' });
      startedAt.push((await waitForExecution(t, key, workflowId, res.body.data.executions[0].id, 'success')).started_at);
    }
    // The buckets expected, from the instants the server recorded (the runs may straddle an hour or a day).
    const perBucket = (width: number, suffix: string) => {
      const counts = new Map<string, number>();
      for (const at of startedAt) counts.set(at.slice(0, width) + suffix, (counts.get(at.slice(0, width) + suffix) ?? 0) + 1);
      return [...counts].sort();
    };
    const m = await t.request.get(`/v1/workflows/${workflowId}/metrics?granularity=hour`).set(bearer(key));
    expect(m.status).toBe(200);
    expect(m.body.data.metrics).toEqual({
      total_executions: 3,
      successful_executions: 3,
      failed_executions: 0,
      success_rate: 1,
      average_duration_ms: expect.any(Number),
      total_messages_sent: 3,
      total_messages_received: 3,
      unique_customers: 2,
      channel_breakdown: { whatsapp: 3 },
    });
    const busy = (m.body.data.daily_metrics as Array<{ date: string; executions: number; success_rate: number }>).filter((b) => b.executions > 0);
    expect(busy.map((b) => [b.date, b.executions])).toEqual(perBucket(13, ':00:00Z'));
    expect(busy.map((b) => b.success_rate)).toEqual(busy.map(() => 1));
    const day = await t.request.get(`/v1/workflows/${workflowId}/metrics`).set(bearer(key));
    expect(day.body.data.daily_metrics).toHaveLength(31);
    const busyDays = (day.body.data.daily_metrics as Array<{ date: string; executions: number }>).filter((b) => b.executions > 0);
    expect(busyDays.map((b) => [b.date, b.executions])).toEqual(perBucket(10, ''));

    const bad = await t.request.get(`/v1/workflows/${workflowId}/metrics?granularity=year`).set(bearer(key));
    expect(bad.status).toBe(422);
    expect(bad.body.error).toMatchObject({ code: 'INVALID_GRANULARITY', field: 'granularity' });
    const range = await t.request
      .get(`/v1/workflows/${workflowId}/executions?start_date=2026-02-01T00:00:00Z&end_date=2026-01-01T00:00:00Z`)
      .set(bearer(key));
    expect(range.status).toBe(400);
    expect(range.body.error).toMatchObject({ code: 'INVALID_DATE_RANGE', field: 'end_date' });
    const missing = await t.request.get(`/v1/workflows/wf_missing/metrics`).set(bearer(key));
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('WORKFLOW_NOT_FOUND');
  });
});
