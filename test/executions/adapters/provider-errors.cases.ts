/**
 * The channel provider and the model endpoint failing, against real local HTTP servers:
 * what is retried (408, 429, 5xx, timeouts), what is final (other 4xx, a model answer
 * without content), and the node's budget running out (message nodes 5 attempts,
 * ai_response 4; docs/outages.md). A retried send reuses the step's Idempotency-Key and
 * the transcript holds the message once.
 *
 * Timeouts are short (CHANNEL_PROVIDER_TIMEOUT_MS, AI_MODEL_TIMEOUT_MS: 2 s), yet long enough
 * that a loaded CI machine answering a scripted 5xx late is not read as a timeout; the budgets' backoff is fixed (about 7 s until the last attempt), so the two
 * budget-exhaustion cases share one test and wait together.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createActivities } from '../../../temporal/activities';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { type ChannelProvider, startChannelProvider } from '../../helpers/channel-provider';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { createActiveWorkflow, waitFor, waitForExecution } from '../helpers';

type ModelAnswer = number | 'hang' | 'empty';

/**
 * An OpenAI-compatible chat-completions server. Questions containing a scripted word get
 * the scripted answers in order (a status, no answer at all, or 200 without content), then 200.
 */
async function startModel() {
  const script = new Map<string, ModelAnswer[]>();
  const calls: string[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const question = String(JSON.parse(raw).messages[1].content).split('Question: ')[1] ?? '';
      calls.push(question);
      const word = [...script.keys()].find((w) => question.includes(w));
      const answer: ModelAnswer = (word === undefined ? undefined : script.get(word)!.shift()) ?? 200;
      if (answer === 'hang') return;
      const content = answer === 'empty' ? '' : `Model answer to: ${question}`;
      res.writeHead(answer === 'empty' ? 200 : answer, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    calls: (word: string) => calls.filter((q) => q.includes(word)).length,
    script: (word: string, ...answers: ModelAnswer[]) => void script.set(word, answers),
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('provider and model errors', () => {
  let t: TestApp;
  let worker: TestWorker;
  let key: string;
  let provider: ChannelProvider;
  let model: Awaited<ReturnType<typeof startModel>>;
  let aiWorkflow: string;

  beforeAll(async () => {
    provider = await startChannelProvider();
    model = await startModel();
    t = await createTestApp({
      CHANNEL_PROVIDER_URL: provider.url,
      CHANNEL_PROVIDER_TIMEOUT_MS: '2000',
      AI_MODEL_URL: model.url,
      AI_MODEL_TIMEOUT_MS: '2000',
    });
    worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
    key = (await t.createKey('admin')).key;
    const kb = await t.request.post('/v1/knowledge-bases').set(bearer(key)).send({ name: 'Help' });
    await t.request
      .post(`/v1/knowledge-bases/${kb.body.data.id}/articles`)
      .set(bearer(key))
      .send({ title: 'Reset your password', content: 'To reset your password open Settings, choose Security and press Reset password.' });
    aiWorkflow = await createActiveWorkflow(t, key, {
      name: 'Assistant',
      channel: 'whatsapp',
      configuration: {
        trigger: { type: 'keyword', keywords: ['password'] },
        nodes: [{ id: 'answer', type: 'ai_response', knowledge_base: kb.body.data.id, confidence_threshold: 0.5 }],
      },
    });
  });
  afterAll(async () => {
    await worker.stop();
    await t.close();
    await provider.close();
    await model.close();
  });

  const send = (body: object) => t.request.post('/v1/messages').set(bearer(key)).send(body);
  const outbound = (executionId: string) =>
    t.query<{ text: string }>("select text from messages where execution_id = ? and direction = 'outbound' order by created_at", [executionId]);
  /** Starts the assistant on a question about resetting a password; `word` tells the model which script applies. */
  const ask = async (word: string) => {
    const res = await send({ channel: 'whatsapp', customer_id: `ai-${word}`, message: `reset password ${word}` });
    expect(res.status).toBe(201);
    return res.body.data.executions[0].id as string;
  };
  const messageWorkflow = (name: string, keyword: string, nodes: object[]) =>
    createActiveWorkflow(t, key, { name, channel: 'instagram', configuration: { trigger: { type: 'keyword', keywords: [keyword] }, nodes } });

  describe('the channel adapter', () => {
    it('retries 408 and 429 under the same Idempotency-Key and records the message once', async () => {
      const workflowId = await messageWorkflow('Busy provider', 'busy', [
        { id: 'a', type: 'message', content: 'after a 408', next: 'b' },
        { id: 'b', type: 'message', content: 'after two 429s' },
      ]);
      provider.answer('after a 408', 408);
      provider.answer('after two 429s', 429, 429);
      const res = await send({ channel: 'instagram', customer_id: 'busy-1', message: 'busy?' });
      const id = res.body.data.executions[0].id as string;
      const done = await waitForExecution(t, key, workflowId, id, 'success');
      expect(done.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([
        ['a', 'completed'],
        ['b', 'completed'],
      ]);
      const answered = (text: string) => provider.sent.filter((r) => r.text === text);
      expect(answered('after a 408').map((r) => [r.status, r.idempotencyKey])).toEqual([
        [408, `${id}:a`],
        [200, `${id}:a`],
      ]);
      expect(answered('after two 429s').map((r) => [r.status, r.idempotencyKey])).toEqual([
        [429, `${id}:b`],
        [429, `${id}:b`],
        [200, `${id}:b`],
      ]);
      expect((await outbound(id)).map((m) => m.text)).toEqual(['after a 408', 'after two 429s']);
    });

    it('retries a send the provider does not answer within CHANNEL_PROVIDER_TIMEOUT_MS', async () => {
      const workflowId = await messageWorkflow('Slow provider', 'slow', [{ id: 'a', type: 'message', content: 'slow text' }]);
      // Every send of the text waits until a second one arrives: the first has timed out by then.
      const release = provider.holdText('slow text');
      const res = await send({ channel: 'instagram', customer_id: 'slow-1', message: 'slow?' });
      const id = res.body.data.executions[0].id as string;
      await waitFor(async () => provider.arrived.filter((x) => x === 'slow text').length >= 2, 'the retried send');
      release();
      const done = await waitForExecution(t, key, workflowId, id, 'success');
      expect(done.steps[0]).toMatchObject({ node_id: 'a', status: 'completed', output: { message_sent: 'slow text' } });
      expect(new Set(provider.sent.filter((r) => r.text === 'slow text').map((r) => r.idempotencyKey))).toEqual(new Set([`${id}:a`]));
      expect((await outbound(id)).map((m) => m.text)).toEqual(['slow text']);
    });
  });

  describe('the model endpoint', () => {
    it('a refusal (4xx) or an answer without content is final: api_error at once, nothing sent', async () => {
      model.script('refused', 400);
      model.script('empty', 'empty');
      const refused = await ask('refused');
      const empty = await ask('empty');
      const failed = await waitForExecution(t, key, aiWorkflow, refused, 'failed');
      expect(failed.error).toEqual({ type: 'api_error', message: expect.stringContaining('400') });
      expect(failed.steps).toEqual([expect.objectContaining({ node_id: 'answer', type: 'ai_response', status: 'failed' })]);
      const noContent = await waitForExecution(t, key, aiWorkflow, empty, 'failed');
      expect(noContent.error).toEqual({ type: 'api_error', message: expect.stringContaining('no answer') });
      expect([model.calls('refused'), model.calls('empty')]).toEqual([1, 1]);
      expect([...(await outbound(refused)), ...(await outbound(empty))]).toEqual([]);
    });

    it('a 5xx or an answer later than AI_MODEL_TIMEOUT_MS is retried, and the answer is sent once', async () => {
      model.script('flaky', 502);
      model.script('sluggish', 'hang');
      const flaky = await ask('flaky');
      const sluggish = await ask('sluggish');
      for (const [id, word] of [
        [flaky, 'flaky'],
        [sluggish, 'sluggish'],
      ] as const) {
        const done = await waitForExecution(t, key, aiWorkflow, id, 'success');
        expect(done.steps[0]).toMatchObject({ status: 'completed', output: { response: `Model answer to: reset password ${word}`, model_used: true, fallback_used: false } });
        expect(model.calls(word)).toBe(2);
        expect((await outbound(id)).map((m) => m.text)).toEqual([`Model answer to: reset password ${word}`]);
      }
    });
  });

  it('attempts run out: the channel provider after 5 attempts of the node, the model after 4; the execution fails with api_error', async () => {
    const workflowId = await messageWorkflow('Down provider', 'down', [{ id: 'a', type: 'message', content: 'never delivered' }]);
    provider.answer('never delivered', ...Array<number>(10).fill(503));
    model.script('broken', ...Array<number>(10).fill(500));
    const res = await send({ channel: 'instagram', customer_id: 'down-1', message: 'down?' });
    const channelId = res.body.data.executions[0].id as string;
    const modelId = await ask('broken');

    const channelFailed = await waitForExecution(t, key, workflowId, channelId, 'failed');
    expect(channelFailed.error).toEqual({ type: 'api_error', message: expect.stringContaining('503') });
    expect(channelFailed.steps).toEqual([expect.objectContaining({ node_id: 'a', status: 'failed' })]);
    // The run of message nodes tries once, then the node activity its 5 attempts.
    expect(provider.sent.filter((r) => r.text === 'never delivered').map((r) => r.status)).toEqual(Array(6).fill(503));
    expect(await outbound(channelId)).toEqual([]);

    const modelFailed = await waitForExecution(t, key, aiWorkflow, modelId, 'failed');
    expect(modelFailed.error).toEqual({ type: 'api_error', message: expect.stringContaining('500') });
    expect(model.calls('broken')).toBe(4);
    expect(await outbound(modelId)).toEqual([]);
  });
});
