/**
 * The Kubernetes chart (deploy/helm/workflow-automation), validated offline: `helm lint`
 * and `helm template` under each values example, every rendered object checked against
 * the Kubernetes API schemas (and KEDA's and prometheus-operator's), and the settings the
 * pods get checked against the service's own configuration loader.
 * helm is built before jest runs (.ci/run, `npm test`'s pretest); this file only looks it up.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { findHelm, helmMissingMessage } from '../../scripts/lib/helm';
import { loadConfig } from '../../src/config';
import { keyringOf, parseKeyring, secretPlace } from '../../src/secrets';
import { type KubernetesObject, validateKubernetesObject } from './kubernetes-schemas';

const CHART = path.resolve(__dirname, '../../deploy/helm/workflow-automation');
const EXAMPLES = readdirSync(path.join(CHART, 'examples'))
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const exampleFile = (name: string) => path.join(CHART, 'examples', name);

/**
 * The variable the chart's Secret seals stored secrets with (`wfa.sealingKeyVar` in
 * _helpers.tpl), and what an `existingSecret` must hold (docs/deploy.md, "Install").
 */
const SEALING_KEY_VAR = 'SECRETS_ENCRYPTION_KEYS';
const EXISTING_SECRET_EXAMPLE: Record<string, string> = {
  DATABASE_URL: 'postgresql://wfa:secret@postgresql.databases:5432/workflow_automation',
  REDIS_URL: 'redis://:secret@redis.databases:6379',
  [SEALING_KEY_VAR]: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
};

/** The final stage's `ENV` of the Dockerfile: what every container of the image starts with. */
function imageEnv(): Record<string, string> {
  const dockerfile = readFileSync(path.resolve(__dirname, '../../Dockerfile'), 'utf8');
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  return Object.fromEntries([...finalStage.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

let helmPath: string;

beforeAll(() => {
  const found = findHelm();
  if (!found) throw new Error(helmMissingMessage());
  helmPath = found;
});

function helm(args: string[]): string {
  try {
    return execFileSync(helmPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`helm ${args.join(' ')} failed:\n${e.stderr ?? ''}${e.stdout ?? ''}`);
  }
}

function render(valuesFiles: string[], sets: string[] = []): KubernetesObject[] {
  const out = helm([
    'template', 'wfa', CHART, '--namespace', 'wfa', '--kube-version', '1.30.0',
    ...valuesFiles.flatMap((f) => ['--values', f]),
    ...sets.flatMap((s) => ['--set', s]),
  ]);
  return parseAllDocuments(out)
    .map((doc) => doc.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
}

const find = (objects: KubernetesObject[], kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in: ${objects.map((o) => `${o.kind}/${o.metadata.name}`).join(', ')}`);
  return found as KubernetesObject & { spec: any; data?: Record<string, string>; stringData?: Record<string, string> };
};
const container = (deployment: { spec: any }) => deployment.spec.template.spec.containers[0];
const envOf = (c: { env?: Array<{ name: string; value?: string; valueFrom?: unknown }> }) =>
  Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));

describe('chart: lint and schemas', () => {
  test('there are values examples to check', () => {
    expect(EXAMPLES).toEqual(['minimal.yaml', 'production.yaml']);
  });

  test.each(EXAMPLES)('helm lint --strict passes with examples/%s', (example) => {
    expect(helm(['lint', '--strict', CHART, '--values', exampleFile(example)])).toContain('0 chart(s) failed');
  });

  test.each(EXAMPLES)('every object rendered with examples/%s is valid against its Kubernetes schema', (example) => {
    const objects = render([exampleFile(example)]);
    expect(objects.length).toBeGreaterThan(8);
    for (const object of objects) validateKubernetesObject(object);
  });

  test('the validator rejects a broken object and a kind it has no schema for', () => {
    const api = find(render([exampleFile('minimal.yaml')]), 'Deployment', 'wfa-workflow-automation-api');
    const broken = structuredClone(api);
    container(broken).ports[0].containerPort = 'http';
    expect(() => validateKubernetesObject(broken)).toThrow(/containerPort must be integer/);
    const missingName = structuredClone(api);
    delete container(missingName).name;
    expect(() => validateKubernetesObject(missingName)).toThrow(/containers\/0 must have required property name/);
    expect(() => validateKubernetesObject({ apiVersion: 'v1', kind: 'Pdo', metadata: { name: 'x' } })).toThrow(/no schema for v1\/Pdo/);
  });
});

describe('chart: what it runs (examples/minimal.yaml)', () => {
  const objects = () => render([exampleFile('minimal.yaml')]);

  test('renders the API with its HPA, the worker, the migration Job, settings, credentials and budgets', () => {
    expect(objects().map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ConfigMap/wfa-workflow-automation',
      'Deployment/wfa-workflow-automation-api',
      'Deployment/wfa-workflow-automation-worker',
      'HorizontalPodAutoscaler/wfa-workflow-automation-api',
      'Job/wfa-workflow-automation-migrate',
      'Pod/wfa-workflow-automation-test-readyz',
      'PodDisruptionBudget/wfa-workflow-automation-api',
      'PodDisruptionBudget/wfa-workflow-automation-worker',
      'Secret/wfa-workflow-automation',
      'Secret/wfa-workflow-automation-migrate',
      'Service/wfa-workflow-automation-api',
      'Service/wfa-workflow-automation-worker-metrics',
      'ServiceAccount/wfa-workflow-automation',
    ]);
  });

  test('the API: role api, probes on /readyz and /healthz of its port, no migration at start, scaled on CPU', () => {
    const all = objects();
    const api = find(all, 'Deployment', 'wfa-workflow-automation-api');
    const c = container(api);
    expect(c.args).toEqual(['api']);
    expect(c.ports).toEqual([{ name: 'http', containerPort: 3000, protocol: 'TCP' }]);
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(envOf(c).MIGRATE_ON_START).toBe('false');
    // The HPA owns the count: a replicas field would reset it at every upgrade.
    expect(api.spec.replicas).toBeUndefined();
    const hpa = find(all, 'HorizontalPodAutoscaler', 'wfa-workflow-automation-api');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'wfa-workflow-automation-api' });
    expect(hpa.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    expect(c.resources.requests.cpu).toBe('500m');
    const service = find(all, 'Service', 'wfa-workflow-automation-api');
    expect(service.spec.ports[0].targetPort).toBe('http');
    expect(service.spec.selector).toEqual(api.spec.selector.matchLabels);
    const annotations = api.spec.template.metadata.annotations;
    expect(annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': '3000', 'prometheus.io/path': '/metrics' });
  });

  test('the worker: role worker, its own metrics port with liveness and readiness (polling) probes, no migration at start, a grace period longer than its 30 s drain', () => {
    const worker = find(objects(), 'Deployment', 'wfa-workflow-automation-worker');
    const c = container(worker);
    expect(c.args).toEqual(['worker']);
    expect(envOf(c)).toEqual({ MIGRATE_ON_START: 'false', METRICS_PORT: '9464' });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    expect(worker.spec.replicas).toBe(2);
    expect(worker.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(30);
    expect(worker.spec.template.metadata.annotations['prometheus.io/port']).toBe('9464');
  });

  test('helm test: a hook Pod calls the API Service\'s /readyz with the release\'s image and fails on anything but 200', () => {
    const all = objects();
    const pod = find(all, 'Pod', 'wfa-workflow-automation-test-readyz');
    expect(pod.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'test' });
    const c = pod.spec.containers[0];
    expect(c.image).toBe(container(find(all, 'Deployment', 'wfa-workflow-automation-api')).image);
    const service = find(all, 'Service', 'wfa-workflow-automation-api');
    expect(envOf(c).READYZ_URL).toBe(`http://wfa-workflow-automation-api.wfa.svc:${service.spec.ports[0].port}/readyz`);
    expect(c.command.slice(0, 2)).toEqual(['node', '-e']);
    expect(c.command[2]).toMatch(/r\.status === 200 \? 0 : 1/);
    expect(pod.spec.restartPolicy).toBe('Never');
    expect(render([exampleFile('minimal.yaml')], ['tests.enabled=false']).filter((o) => o.kind === 'Pod')).toEqual([]);
  });

  test('migrations: a pre-install/pre-upgrade Job running scripts/migrate.ts, its database URL in a hook Secret created before it', () => {
    const all = objects();
    const job = find(all, 'Job', 'wfa-workflow-automation-migrate');
    expect(job.metadata.annotations).toMatchObject({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    });
    const c = container(job);
    // The image's compiled scripts/migrate.ts: plain node, no tsx.
    expect(c.command).toEqual(['node', 'dist/scripts/migrate.js']);
    expect(envOf(c).DATABASE_URL).toEqual({ secretKeyRef: { name: 'wfa-workflow-automation-migrate', key: 'DATABASE_URL' } });
    // A migration seals stored secrets, so the Job needs the key too.
    expect(envOf(c)[SEALING_KEY_VAR]).toEqual({ secretKeyRef: { name: 'wfa-workflow-automation-migrate', key: SEALING_KEY_VAR } });
    // The chart's ServiceAccount does not exist yet when a pre-install hook runs.
    expect(job.spec.template.spec.serviceAccountName).toBeUndefined();
    const secret = find(all, 'Secret', 'wfa-workflow-automation-migrate');
    expect(secret.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(Number(secret.metadata.annotations?.['helm.sh/hook-weight'])).toBeLessThan(Number(job.metadata.annotations?.['helm.sh/hook-weight']));
    expect(secret.stringData?.DATABASE_URL).toMatch(/^postgresql:\/\//);
  });

});

describe('chart: the environment each Deployment runs with passes the service\'s configuration check', () => {
  const cases = EXAMPLES.flatMap((example) => ['api', 'worker'].map((role) => [example, role] as const));

  test.each(cases)('examples/%s, the %s Deployment: image ENV + ConfigMap + Secret + container env pass loadConfig, name by name', (example, role) => {
    const all = render([exampleFile(example)]);
    const deployment = find(all, 'Deployment', `wfa-workflow-automation-${role}`);
    const c = container(deployment);
    expect(c.args).toEqual([role]);
    // The variables in the order Kubernetes applies them: envFrom sources, then env.
    const fromSources = (c.envFrom as Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>).map((source) => {
      if (source.configMapRef) return find(all, 'ConfigMap', source.configMapRef.name).data ?? {};
      const name = source.secretRef!.name;
      const rendered = all.find((o) => o.kind === 'Secret' && o.metadata.name === name) as { stringData?: Record<string, string> } | undefined;
      // An existingSecret is the user's: it holds what docs/deploy.md asks of it.
      return rendered ? (rendered.stringData ?? {}) : EXISTING_SECRET_EXAMPLE;
    });
    const env = { ...imageEnv(), ...Object.assign({}, ...fromSources), ...(envOf(c) as Record<string, string>) } as Record<string, string>;
    // As the API and the worker load it: they refuse to start without a key.
    const config = loadConfig(env, { requireSecretsKey: true }) as unknown as Record<string, unknown>;
    // Every name set is one the service reads (an unknown one would be silently ignored).
    for (const name of Object.keys(env)) expect([name, name in config]).toEqual([name, true]);
    expect(config).toMatchObject({ MIGRATE_ON_START: false, FILE_STORAGE: 's3', NODE_ENV: 'production', TEMPORAL_WORKFLOW_BUNDLE_PATH: '/app/dist/workflow-bundle.js' });
    expect(config[SEALING_KEY_VAR]).toBeTruthy();
    if (role === 'worker') expect(config.METRICS_PORT).toBe(9464);
    else expect(config.PORT).toBe(3000);
  });
});

describe('chart: production example (existingSecret, KEDA, ServiceMonitor)', () => {
  const objects = () => render([exampleFile('production.yaml')]);

  test('credentials come from the existing Secret: the chart writes none', () => {
    const all = objects();
    expect(all.filter((o) => o.kind === 'Secret')).toEqual([]);
    for (const name of ['wfa-workflow-automation-api', 'wfa-workflow-automation-worker']) {
      expect(container(find(all, 'Deployment', name)).envFrom).toEqual([
        { configMapRef: { name: 'wfa-workflow-automation' } },
        { secretRef: { name: 'wfa-credentials' } },
      ]);
    }
    const migrateEnv = envOf(container(find(all, 'Job', 'wfa-workflow-automation-migrate')));
    expect(migrateEnv.DATABASE_URL).toEqual({ secretKeyRef: { name: 'wfa-credentials', key: 'DATABASE_URL' } });
    expect(migrateEnv[SEALING_KEY_VAR]).toEqual({ secretKeyRef: { name: 'wfa-credentials', key: SEALING_KEY_VAR } });
  });

  test('KEDA scales the worker on the Temporal task queue the worker polls', () => {
    const all = objects();
    const settings = find(all, 'ConfigMap', 'wfa-workflow-automation').data ?? {};
    const scaled = find(all, 'ScaledObject', 'wfa-workflow-automation-worker');
    expect(scaled.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'wfa-workflow-automation-worker' });
    expect(scaled.spec.triggers).toHaveLength(1);
    expect(scaled.spec.triggers[0].type).toBe('temporal');
    expect(scaled.spec.triggers[0].metadata).toMatchObject({
      endpoint: settings.TEMPORAL_ADDRESS,
      namespace: settings.TEMPORAL_NAMESPACE,
      taskQueue: settings.TEMPORAL_TASK_QUEUE,
      targetQueueSize: '20',
    });
    expect([scaled.spec.minReplicaCount, scaled.spec.maxReplicaCount]).toEqual([2, 10]);
    // KEDA owns the count.
    expect(find(all, 'Deployment', 'wfa-workflow-automation-worker').spec.replicas).toBeUndefined();
  });

  test('the ServiceMonitor scrapes the named ports of the API and worker Services, which it selects', () => {
    const all = objects();
    const monitor = find(all, 'ServiceMonitor', 'wfa-workflow-automation');
    expect(monitor.metadata.labels?.release).toBe('kube-prometheus-stack');
    const selected = all.filter(
      (o) => o.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v),
    ) as unknown as Array<{ spec: any }>;
    const servicePorts = selected.flatMap((s) => s.spec.ports.map((p: { name: string }) => p.name)).sort();
    expect(servicePorts).toEqual(['http', 'metrics']);
    expect(monitor.spec.endpoints.map((e: { port: string; path: string }) => `${e.port} ${e.path}`)).toEqual(['http /metrics', 'metrics /metrics']);
    expect(container(find(all, 'Deployment', 'wfa-workflow-automation-api')).ports[0].name).toBe('http');
    expect(container(find(all, 'Deployment', 'wfa-workflow-automation-worker')).ports[0].name).toBe('metrics');
  });
});

describe('chart: the Ingress, the NetworkPolicies and the PrometheusRule', () => {
  test('the Ingress routes every path to the API but /metrics, which goes to a Service without endpoints', () => {
    const all = render([exampleFile('production.yaml')]);
    const ingress = find(all, 'Ingress', 'wfa-workflow-automation-api');
    const paths = ingress.spec.rules[0].http.paths as Array<{ path: string; pathType: string; backend: { service: { name: string } } }>;
    expect(paths.map((p) => [p.path, p.pathType, p.backend.service.name])).toEqual([
      ['/', 'Prefix', 'wfa-workflow-automation-api'],
      ['/metrics', 'Prefix', 'wfa-workflow-automation-closed'],
    ]);
    const closed = find(all, 'Service', 'wfa-workflow-automation-closed');
    expect(closed.spec.selector).toBeUndefined();
    // Nothing of the release selects it either (the ServiceMonitor selects by name and instance).
    expect(closed.metadata.labels?.['app.kubernetes.io/name']).toBeUndefined();
  });

  test('NetworkPolicies: off by default; on, the API port is open (to apiFrom when set, plus the scrapers) and the workers take only scrapes', () => {
    expect(render([exampleFile('minimal.yaml')]).filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
    const open = render([exampleFile('minimal.yaml')], ['networkPolicy.enabled=true']);
    for (const object of open) validateKubernetesObject(object);
    const api = find(open, 'NetworkPolicy', 'wfa-workflow-automation-api');
    const apiDeployment = find(open, 'Deployment', 'wfa-workflow-automation-api');
    expect(api.spec.podSelector.matchLabels).toEqual(apiDeployment.spec.selector.matchLabels);
    expect(api.spec.ingress).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }] }]);
    const worker = find(open, 'NetworkPolicy', 'wfa-workflow-automation-worker');
    expect(worker.spec.podSelector.matchLabels).toEqual(find(open, 'Deployment', 'wfa-workflow-automation-worker').spec.selector.matchLabels);
    expect(worker.spec.ingress).toEqual([{ ports: [{ port: 'metrics', protocol: 'TCP' }], from: [{ namespaceSelector: {} }] }]);

    const monitoring = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const ingressController = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } };
    const values = path.join(tmpdir(), `wfa-netpol-${process.pid}.yaml`);
    writeFileSync(values, JSON.stringify({ networkPolicy: { enabled: true, apiFrom: [ingressController], metricsFrom: [monitoring] } }));
    const closed = render([exampleFile('minimal.yaml'), values]);
    rmSync(values);
    expect(find(closed, 'NetworkPolicy', 'wfa-workflow-automation-api').spec.ingress[0].from).toEqual([ingressController, monitoring]);
    expect(find(closed, 'NetworkPolicy', 'wfa-workflow-automation-worker').spec.ingress[0].from).toEqual([monitoring]);
  });

  test('the PrometheusRule: off by default; on, it holds exactly the rule groups of deploy/prometheus/alerts.yml', () => {
    expect(render([exampleFile('production.yaml')]).filter((o) => o.kind === 'PrometheusRule')).toEqual([]);
    const rule = find(render([exampleFile('production.yaml')], ['metrics.prometheusRule.enabled=true', 'metrics.prometheusRule.labels.release=kube-prometheus-stack']), 'PrometheusRule', 'wfa-workflow-automation');
    validateKubernetesObject(rule);
    expect(rule.metadata.labels?.release).toBe('kube-prometheus-stack');
    const plain = parseYaml(readFileSync(path.resolve(__dirname, '../../deploy/prometheus/alerts.yml'), 'utf8')) as { groups: unknown[] };
    expect(rule.spec).toEqual({ groups: plain.groups });
  });
});

describe('chart: the secrets keyring', () => {
  const minimal = exampleFile('minimal.yaml');
  const KEY = Buffer.alloc(32, 9).toString('base64');
  /** What the release's Secret and the migration hook's Secret give the pods, as the service reads it. */
  const keyringsOf = (sets: string[]) => {
    const all = render([minimal], sets);
    return ['wfa-workflow-automation', 'wfa-workflow-automation-migrate'].map((name) => {
      const data = (find(all, 'Secret', name) as { stringData?: Record<string, string> }).stringData ?? {};
      expect(Object.keys(data).filter((k) => k.startsWith('SECRETS_ENCRYPTION_'))).toEqual([SEALING_KEY_VAR]);
      const ids = (parseKeyring(data[SEALING_KEY_VAR]!) as Array<{ id: string }>).map((k) => k.id);
      return { ids, ring: keyringOf(loadConfig({ [SEALING_KEY_VAR]: data[SEALING_KEY_VAR] }, { requireSecretsKey: true })) };
    });
  };
  const place = secretPlace('webhooks', 'signing_secret', '00000000-0000-0000-0000-000000000001');

  test('a keyring of two keys reaches the pods and the migration, the first one sealing', () => {
    const sets = [`secrets.SECRETS_ENCRYPTION_KEYS=k2:${KEY}\\,k1:${Buffer.alloc(32, 7).toString('base64')}`];
    for (const { ids, ring } of keyringsOf(sets)) {
      expect(ids).toEqual(['k2', 'k1']);
      expect(ring.sealingKeyId).toBe('k2');
    }
  });

  test('the one-key form of releases made before the keyring is stored as the keyring `default:<key>`', () => {
    const sets = ['secrets.SECRETS_ENCRYPTION_KEYS=', `secrets.SECRETS_ENCRYPTION_KEY=${KEY}`];
    // A value sealed by a release that had SECRETS_ENCRYPTION_KEY=<key> still opens.
    const before = keyringOf(loadConfig({ SECRETS_ENCRYPTION_KEY: KEY }, { requireSecretsKey: true })).seal('whsec_example', place);
    for (const { ids, ring } of keyringsOf(sets)) {
      expect(ids).toEqual(['default']);
      expect(ring.open(before, place)).toBe('whsec_example');
    }
  });

  test('refuses both forms at once, no key, a bare key as the keyring, or a key in `config`', () => {
    expect(() => render([minimal], [`secrets.SECRETS_ENCRYPTION_KEY=${KEY}`])).toThrow(/SECRETS_ENCRYPTION_KEYS and secrets\.SECRETS_ENCRYPTION_KEY are both set/);
    expect(() => render([minimal], ['secrets.SECRETS_ENCRYPTION_KEYS='])).toThrow(/secrets\.SECRETS_ENCRYPTION_KEYS is required/);
    // A bare key as the keyring: refused, and helm's message does not print it.
    let helmSays = '';
    try {
      render([minimal], [`secrets.SECRETS_ENCRYPTION_KEYS=${KEY}`]);
    } catch (err) {
      helmSays = (err as Error).message.split(' failed:\n')[1]!;
    }
    expect(helmSays).toMatch(/secrets\.SECRETS_ENCRYPTION_KEYS: expected id:key/);
    expect(helmSays).not.toContain(KEY);
    for (const name of ['SECRETS_ENCRYPTION_KEYS', 'SECRETS_ENCRYPTION_KEY', 'SECRETS_ENCRYPTION_KEYS_FILE']) {
      expect(() => render([minimal], [`config.${name}=x`])).toThrow(new RegExp(`config\\.${name}: set by the chart`));
    }
  });
});

describe('chart: refuses releases that cannot work', () => {
  const minimal = exampleFile('minimal.yaml');

  test('without a database, a Redis and a bucket (the defaults alone)', () => {
    expect(() => render([])).toThrow(/(secrets\.DATABASE_URL|secrets\.REDIS_URL|s3\.bucket) is required/);
  });

  test('a worker grace period that does not cover the 30 s drain', () => {
    expect(() => render([minimal], ['worker.terminationGracePeriodSeconds=30'])).toThrow(/longer than the worker's 30 s drain/);
    expect(render([minimal], ['worker.terminationGracePeriodSeconds=31']).length).toBeGreaterThan(0);
  });

  test('a misspelt value, or a `config` name that is no environment variable (values.schema.json)', () => {
    expect(() => render([minimal], ['worker.keda.enabeld=true'])).toThrow(/additional properties 'enabeld' not allowed/);
    expect(() => render([minimal], ['config.log_level=debug'])).toThrow(/invalid propertyName 'log_level'/);
    expect(() => render([minimal], ['logLevel=verbose'])).toThrow(/at '\/logLevel'/);
  });

  test('a setting in `config` that the chart sets itself, or a credential there', () => {
    expect(() => render([minimal], ['config.LOG_LEVEL=debug'])).toThrow(/config\.LOG_LEVEL: set by the chart/);
    expect(() => render([minimal], ['config.MIGRATE_ON_START=true'])).toThrow(/config\.MIGRATE_ON_START: set by the chart/);
    expect(() => render([minimal], ['config.DATABASE_URL=postgresql://x'])).toThrow(/config\.DATABASE_URL: set by the chart/);
  });
});
