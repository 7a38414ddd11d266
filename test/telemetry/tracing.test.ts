/**
 * One trace from request to delivery, end to end: an API and a worker process started the
 * way production starts them (src/main.ts) with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a
 * real OTLP/HTTP receiver in this test (JSON protocol). A form conversation runs through
 * them; the test then reads the exported spans and checks the parent/child links from the
 * inbound request (which carries a `traceparent` of ours) through the Temporal start, the
 * workflow run and its activities to the channel provider call, and the webhook delivery's
 * own trace down to its HTTP POST (which carries `traceparent`), its root span linked to the
 * conversation's span that recorded the event. It plants known secrets
 * (an API key in `Authorization`, a webhook signing secret, a cookie) and looks for them in
 * every byte the receiver got.
 */
import { randomBytes } from 'node:crypto';
import { bearer, createTestApp, type TestApp } from '../helpers/app';
import { startChannelProvider, type ChannelProvider } from '../helpers/channel-provider';
import { startFakeHttpServer, type FakeHttpServer } from '../helpers/fake-http-server';
import { startHttpsReceiver, type HttpsReceiver } from '../helpers/https-receiver';
import { spawnService, type SpawnedProcess } from '../helpers/process';
import { waitFor } from '../helpers/wait';

/** An exported span, as OTLP/JSON carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
  links?: Array<{ traceId: string; spanId: string }>;
  service: string;
}

const SERVER = 2;
const CLIENT = 3;

function spansOf(receiver: FakeHttpServer): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const request of receiver.arrived) {
    if (request.path !== '/v1/traces') continue;
    for (const rs of request.json?.resourceSpans ?? []) {
      const service = rs.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name')?.value?.stringValue as string;
      for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) out.push({ ...span, service });
    }
  }
  return out;
}

const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  return v === undefined ? undefined : Object.values(v)[0];
};

/** The span's ancestors, nearest first, as far as the exported spans reach. */
function ancestors(spans: OtlpSpan[], span: OtlpSpan): OtlpSpan[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const chain: OtlpSpan[] = [];
  for (let p = span.parentSpanId && byId.get(span.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId)) chain.push(p);
  return chain;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('tracing: one trace from request to delivery', () => {
  let t: TestApp;
  let otlp: FakeHttpServer;
  let provider: ChannelProvider;
  let hooks: HttpsReceiver;
  let api: SpawnedProcess;
  let worker: SpawnedProcess;
  let apiUrl: string;

  beforeAll(async () => {
    t = await createTestApp();
    otlp = await startFakeHttpServer();
    provider = await startChannelProvider();
    hooks = await startHttpsReceiver();
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // Export within 100 ms, so the test waits for spans, not for the batch timer.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      CHANNEL_PROVIDER_URL: provider.url,
      WEBHOOK_EXTRA_CA_FILE: hooks.caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOK_DISPATCH_POLL_MS: '250',
      PORT: '0',
    };
    // Without the run's prebuilt bundle: with tracing on, the worker bundles the workflows
    // itself, with Temporal's OpenTelemetry workflow interceptors in the bundle.
    worker = spawnService('worker', t, { ...env, TEMPORAL_WORKFLOW_BUNDLE_PATH: undefined });
    api = spawnService('api', t, env);
    const [, port] = await api.waitForLine(/API listening on http:\/\/localhost:(\d+)/, 60_000);
    apiUrl = `http://127.0.0.1:${port}`;
    await worker.waitForLine(/worker running/, 90_000);
  }, 120_000);

  afterAll(async () => {
    await Promise.all([api?.kill('SIGTERM', 20_000), worker?.kill('SIGTERM', 20_000)]);
    await Promise.all([otlp?.close(), provider?.close(), hooks?.close()]);
    await t?.close();
  });

  it('links the request, the Temporal start, the workflow run, its activities and the channel call; the delivery to its POST; no secret in any span', async () => {
    const { key } = await t.createKey('admin');
    const webhookSecret = `whsec-planted-${hex(16)}`;
    const cookie = `session-planted-${hex(16)}`;
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      fetch(`${apiUrl}${path}`, {
        method,
        headers: { ...bearer(key), cookie: `sid=${cookie}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });

    const hook = await call('POST', '/v1/webhooks', { url: hooks.url('/hook'), events: ['workflow.completed'], secret: webhookSecret });
    expect(hook.status).toBe(201);
    const created = await call('POST', '/v1/workflows', {
      name: 'Lead form',
      channel: 'instagram',
      configuration: {
        trigger: { type: 'keyword', keywords: ['quote'] },
        nodes: [
          { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }], next: 'thanks' },
          { id: 'thanks', type: 'message', content: 'Thanks, we will be in touch.' },
        ],
      },
    });
    expect(created.status).toBe(201);
    const workflowId = ((await created.json()) as { data: { id: string } }).data.id;
    expect((await call('POST', `/v1/workflows/${workflowId}/activate`)).status).toBe(200);

    // The caller's trace: the API continues it.
    const callerTrace = hex(16);
    const callerSpan = hex(8);
    const started = await call('POST', '/v1/messages', { channel: 'instagram', customer_id: 'lead-1', message: 'I want a quote' }, { traceparent: `00-${callerTrace}-${callerSpan}-01` });
    expect(started.status).toBe(201);
    await waitFor(async () => provider.arrived.includes('Your email?'), 'the form prompt at the channel provider', 30_000);
    const reply = await call('POST', '/v1/messages', { channel: 'instagram', customer_id: 'lead-1', message: 'ada@example.com' });
    expect(reply.status).toBe(201);
    await waitFor(async () => provider.arrived.includes('Thanks, we will be in touch.'), 'the closing message', 30_000);
    const [delivery] = await hooks.waitFor('/hook', 1, 30_000);
    // The delivery carries the W3C context of its own trace.
    const [, deliveryTrace = '', deliveryParent] = String(delivery!.headers.traceparent).split('-');
    expect(deliveryTrace).toMatch(/^[0-9a-f]{32}$/);

    // The request's span continues the caller's trace…
    const spans = await waitFor(
      async () => {
        // Workflow spans leave the sandbox when their workflow task completes: wait for both runs.
        const all = spansOf(otlp);
        const runs = all.filter((s) => s.name.startsWith('RunWorkflow:')).map((s) => s.traceId);
        return runs.includes(callerTrace) && runs.includes(deliveryTrace) ? all : undefined;
      },
      'the spans of the conversation and the delivery',
      30_000,
    );
    const inTrace = spans.filter((s) => s.traceId === callerTrace);
    const request = inTrace.find((s) => s.kind === SERVER && s.parentSpanId === callerSpan);
    expect(request).toMatchObject({ name: 'POST /v1/messages', service: 'workflow-automation-api' });
    expect(attr(request!, 'http.route')).toBe('/v1/messages');

    // …then the Temporal start inside it, the run as the start's child, each activity the
    // child of its StartActivity, and the provider call inside an activity.
    const start = inTrace.find((s) => s.name.startsWith('StartWorkflow:'))!;
    expect(ancestors(spans, start)).toContain(request);
    const run = inTrace.find((s) => s.name.startsWith('RunWorkflow:'))!;
    expect(run.parentSpanId).toBe(start.spanId);
    expect(run.service).toBe('workflow-automation-worker');
    const activities = inTrace.filter((s) => s.name.startsWith('RunActivity:'));
    expect(activities.length).toBeGreaterThan(0);
    for (const activity of activities) {
      const scheduled = spans.find((s) => s.spanId === activity.parentSpanId)!;
      expect(scheduled.name).toMatch(/^Start(Local)?Activity:/);
      expect(ancestors(spans, activity)).toContain(run);
    }
    const prompt = provider.received.find((m) => m.text === 'Your email?')!;
    const [, promptTrace, promptParent] = String(prompt.headers.traceparent).split('-');
    expect(promptTrace).toBe(callerTrace);
    const providerCall = spans.find((s) => s.spanId === promptParent)!;
    expect(providerCall.kind).toBe(CLIENT);
    expect(ancestors(spans, providerCall).some((s) => activities.includes(s))).toBe(true);
    // The database and Redis calls of the request are in its trace too.
    expect(inTrace.some((s) => attr(s, 'db.system') === 'postgresql' && ancestors(spans, s).includes(request!))).toBe(true);

    // The delivery is its own trace (asynchronous by design): the POST the receiver got
    // carries its `traceparent`, the child of the delivery activity, under the delivery run.
    const post = spans.find((s) => s.traceId === deliveryTrace && s.spanId === deliveryParent)!;
    expect(post.kind).toBe(CLIENT);
    const postChain = ancestors(spans, post).map((s) => s.name);
    expect(postChain.some((n) => n.startsWith('RunActivity:'))).toBe(true);
    expect(postChain.some((n) => n.startsWith('RunWorkflow:'))).toBe(true);
    // The delivery's trace starts with the dispatcher's span, which links back to the span
    // of the conversation that recorded the event: inside the run, in the caller's trace.
    const deliveryRoot = spans.find((s) => s.traceId === deliveryTrace && !s.parentSpanId)!;
    expect(deliveryRoot).toMatchObject({ name: 'deliver workflow.completed', service: 'workflow-automation-worker' });
    expect(ancestors(spans, post)).toContain(deliveryRoot);
    expect(deliveryRoot.links).toEqual([expect.objectContaining({ traceId: callerTrace })]);
    const cause = spans.find((s) => s.spanId === deliveryRoot.links![0]!.spanId)!;
    expect(cause.traceId).toBe(callerTrace);
    expect(ancestors(spans, cause)).toContain(run);

    // Log lines written inside the request's trace carry its ids (the access log line).
    const accessLine = await waitFor(
      async () => api.lines.find((l) => l.includes(`"trace_id":"${callerTrace}"`) && l.includes('"route":"/v1/messages"')),
      'the access log line of the caller trace',
      10_000,
    );
    expect(JSON.parse(accessLine)).toMatchObject({ trace_id: callerTrace, span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });

    // No secret in any span: the webhook's INSERT was traced, with its literals replaced.
    const exported = otlp.arrived.map((r) => r.raw).join('\n');
    const webhookInsert = spans.find((s) => /insert into "webhooks"/i.test(String(attr(s, 'db.statement') ?? '')));
    expect(attr(webhookInsert!, 'db.statement')).toContain('?');
    for (const planted of [webhookSecret, key, cookie, `Bearer ${key}`]) expect(exported).not.toContain(planted);
    expect(exported).not.toMatch(/"key":"[^"]*(authorization|cookie|signature)[^"]*","value":\{"stringValue":"(?!\[redacted\])/i);
  }, 120_000);
});
