/**
 * The production image's contents, without Docker: the build script (scripts/build.ts, the
 * image's build stage) compiles the service and bundles the workflows; the compiled API
 * answers /healthz and /readyz; the compiled worker loads the build's workflow bundle
 * (TEMPORAL_WORKFLOW_BUNDLE_PATH, no webpack at start), runs a conversation and delivers its
 * `workflow.completed` webhook, is ready on /readyz of its metrics port, and its /metrics carries the Temporal Core SDK's worker
 * metrics. After that conversation, every metric the Grafana dashboard (deploy/grafana) and
 * the alert rules (deploy/prometheus) read is on the API's or the worker's /metrics.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { build } from '../../scripts/build';
import { bearer, createTestApp, type TestApp, uniqueSuffix } from '../helpers/app';
import { type HttpsReceiver, startHttpsReceiver } from '../helpers/https-receiver';
import { freePort, type SpawnedProcess, spawnService } from '../helpers/process';
import { waitFor } from '../helpers/wait';
import { createActiveWorkflow, waitForExecution } from '../executions/helpers';

jest.setTimeout(300_000);

const ROOT = path.resolve(__dirname, '..', '..');
const DASHBOARD = path.join(ROOT, 'deploy', 'grafana', 'workflow-automation.json');
const ALERTS = path.join(ROOT, 'deploy', 'prometheus', 'alerts.yml');
const CHART_ALERTS = path.join(ROOT, 'deploy', 'helm', 'workflow-automation', 'files', 'alerts.yml');

/** The names of every sample on a Prometheus text exposition (`x_bucket`, `x_sum`, ... as written). */
function sampleNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line);
    if (m) names.add(m[1]!);
  }
  return names;
}

const PROMQL_WORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression reads: identifiers that are not functions (followed
 * by `(`), keywords, label names (inside `{...}` or a `by (...)` clause), strings or durations.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = stripped.slice(m.index + m[0].length).trimStart();
    if (after.startsWith('(') || PROMQL_WORDS.has(m[0].toLowerCase())) continue;
    names.add(m[0]);
  }
  return [...names];
}

interface DashboardPanel {
  type: string;
  title: string;
  targets?: Array<{ expr: string }>;
}
interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

describe('production build: compiled service, prebuilt workflow bundle, metrics, dashboard and alerts', () => {
  let t: TestApp;
  let receiver: HttpsReceiver;
  let key: string;
  let outDir: string;
  let bundlePath: string;
  const children: SpawnedProcess[] = [];
  const startCompiled = (role: 'api' | 'worker', env: Record<string, string | undefined>) => {
    // `node dist/src/main.js <role>`, as the image's entry point runs it: no tsx loader.
    const p = spawnService(role, t, env, { main: path.join(outDir, 'src', 'main.js') });
    children.push(p);
    return p;
  };

  beforeAll(async () => {
    receiver = await startHttpsReceiver();
    t = await createTestApp({ WEBHOOK_EXTRA_CA_FILE: receiver.caFile });
    key = (await t.createKey('admin')).key;
    // Inside the repository, so the compiled code finds node_modules as dist/ does in the image.
    outDir = path.join(ROOT, '.test-build', `image-${uniqueSuffix()}`);
    ({ bundlePath } = await build(outDir, { log: () => undefined }));
  });
  afterAll(async () => {
    for (const c of children.splice(0)) await c.kill('SIGTERM', 30_000);
    if (outDir) await rm(outDir, { recursive: true, force: true });
    await t?.close();
    await receiver?.close();
  });

  let apiPort: string;
  let metricsPort: number;
  let worker: SpawnedProcess;

  it('compiles to JavaScript that runs without TypeScript: the compiled API answers /healthz and /readyz', async () => {
    expect(readFileSync(path.join(outDir, 'src', 'db', 'sql', 'analytics-rollups.sql'), 'utf8')).toMatch(/create or replace function/i);
    const api = startCompiled('api', { PORT: '0' });
    [, apiPort] = (await api.waitForLine(/API listening on http:\/\/localhost:(\d+)/, 60_000)) as [string, string];
    const health = await fetch(`http://127.0.0.1:${apiPort}/healthz`);
    expect([health.status, await health.json()]).toEqual([200, { status: 'ok' }]);
    const ready = await fetch(`http://127.0.0.1:${apiPort}/readyz`);
    expect([ready.status, await ready.json()]).toEqual([200, { status: 'ok', checks: { postgres: 'ok', redis: 'ok', temporal: 'ok' } }]);
  });

  it('the compiled worker loads the build\'s workflow bundle, is ready once polling, and runs a conversation', async () => {
    metricsPort = await freePort();
    worker = startCompiled('worker', {
      TEMPORAL_WORKFLOW_BUNDLE_PATH: bundlePath,
      METRICS_PORT: String(metricsPort),
      EXECUTION_RECONCILE_INTERVAL_MS: '200',
      WEBHOOK_EXTRA_CA_FILE: receiver.caFile,
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    await worker.waitForLine(/worker running/, 60_000);
    // The prebuilt bundle was used: webpack never ran in this process.
    expect(worker.lines.some((l) => l.includes('Workflow bundle created'))).toBe(false);
    const ready = await waitFor(async () => {
      const r = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
      return r.status === 200 ? await r.json() : undefined;
    }, 'worker /readyz 200', 30_000);
    expect(ready).toEqual({ status: 'ok', checks: { worker: 'RUNNING' } });
    const health = await fetch(`http://127.0.0.1:${metricsPort}/healthz`);
    expect(health.status).toBe(200);

    const wf = await createActiveWorkflow(t, key, {
      name: 'Greeting',
      channel: 'whatsapp',
      configuration: { trigger: { type: 'keyword', keywords: ['hello'] }, nodes: [{ id: 'hi', type: 'message', content: 'Hi there!' }] },
    });
    const hook = await t.request.post('/v1/webhooks').set(bearer(key)).send({ url: receiver.url('/completed'), events: ['workflow.completed'] });
    expect(hook.status).toBe(201);
    const sent = await fetch(`http://127.0.0.1:${apiPort}/v1/messages`, {
      method: 'POST',
      headers: { ...bearer(key), 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'whatsapp', customer_id: 'image-1', message: 'hello' }),
    });
    expect(sent.status).toBe(201);
    const executionId = ((await sent.json()) as { data: { executions: Array<{ id: string }> } }).data.executions[0]!.id;
    const done = await waitForExecution(t, key, wf, executionId, 'success', 60_000);
    expect(done.steps.map((s: { node_id: string; status: string }) => [s.node_id, s.status])).toEqual([['hi', 'completed']]);
    // The worker's dispatcher and a delivery workflow (an activity on the task queue) sent the event.
    const [delivery] = await receiver.waitFor('/completed', 1, 60_000).catch((err: unknown) => {
      throw new Error(`${String(err)}; the worker printed:\n${worker.lines.slice(-30).join('\n')}`);
    });
    expect(JSON.parse(delivery!.body)).toMatchObject({ type: 'workflow.completed', data: { execution_id: executionId } });
  });

  const scrape = async (port: string | number) => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    return await res.text();
  };

  it('the worker\'s /metrics carries the Temporal SDK\'s worker metrics and the conversation\'s counters', async () => {
    const text = await waitFor(async () => {
      const body = await scrape(metricsPort);
      const counted = /^executions_finished_total\{status="success"\} 1$/m.test(body) && /^webhook_delivery_attempts_total\{outcome="delivered"\} 1$/m.test(body);
      return counted ? body : undefined;
    }, 'the finished conversation and its webhook on the worker /metrics', 30_000);
    const names = sampleNames(text);
    for (const name of [
      'temporal_workflow_task_schedule_to_start_latency_bucket',
      'temporal_worker_task_slots_used',
      'temporal_num_pollers',
      'temporal_worker_task_slots_available',
      'temporal_sticky_cache_size',
      'webhook_backlog_events',
      'activities_waiting_on_dependency',
      'process_cpu_user_seconds_total',
    ]) {
      expect([name, names.has(name)]).toEqual([name, true]);
    }
    // The API started the conversation; its /metrics counted the start and the request.
    const api = await scrape(apiPort);
    expect(api).toMatch(/^workflow_starts_total\{kind="executions"\} 1$/m);
    expect(api).toMatch(/^http_requests_total\{method="POST",route="\/v1\/messages",status="201"\} 1$/m);
  });

  it('every metric of every dashboard panel is on the API\'s or the worker\'s /metrics', async () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { uid: string; panels: DashboardPanel[] };
    expect(dashboard.uid).toBe('workflow-automation');
    const graphs = dashboard.panels.filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThanOrEqual(10);
    const exposed = new Set([...sampleNames(await scrape(apiPort)), ...sampleNames(await scrape(metricsPort))]);
    for (const panel of graphs) {
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const { expr } of panel.targets!) {
        const names = metricNames(expr);
        expect([panel.title, names.length > 0]).toEqual([panel.title, true]);
        for (const name of names) expect([panel.title, name, exposed.has(name)]).toEqual([panel.title, name, true]);
      }
    }
  });

  it('every alert rule reads metrics on /metrics, waits a `for`, and has a severity, a summary and a description; the chart ships the same rules', async () => {
    const text = readFileSync(ALERTS, 'utf8');
    expect(readFileSync(CHART_ALERTS, 'utf8')).toBe(text);
    const rules = (parseYaml(text) as { groups: Array<{ name: string; rules: AlertRule[] }> }).groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    const exposed = new Set([...sampleNames(await scrape(apiPort)), ...sampleNames(await scrape(metricsPort))]);
    for (const rule of rules) {
      expect([rule.alert, rule.for]).toEqual([rule.alert, expect.stringMatching(/^\d+[smh]$/)]);
      expect([rule.alert, rule.labels.severity]).toEqual([rule.alert, expect.stringMatching(/^(warning|critical)$/)]);
      expect([rule.alert, typeof rule.annotations.summary, typeof rule.annotations.description]).toEqual([rule.alert, 'string', 'string']);
      const names = metricNames(rule.expr);
      expect([rule.alert, names.length > 0]).toEqual([rule.alert, true]);
      for (const name of names) expect([rule.alert, name, exposed.has(name)]).toEqual([rule.alert, name, true]);
    }
  });

  it('the compiled worker drains on SIGTERM and exits 0', async () => {
    const exit = await worker.kill('SIGTERM', 60_000);
    expect(exit.code).toBe(0);
    expect(worker.lines.join('\n')).toContain('"msg":"stopped"');
  });
});
