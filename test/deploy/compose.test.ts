/**
 * `docker compose up --build` starts the API and the worker: their environment in
 * docker-compose.yml, over the image's own (the Dockerfile's ENV lines of its final stage),
 * passes the service's configuration validation (loadConfig, src/config.ts) with
 * NODE_ENV=production. The development secrets key is generated on the first start by the
 * compose file's `secrets-key` service: its command is run here, as the container runs it,
 * into a directory standing for the volume; no key is written in the file itself. Every
 * command run in the image (its entry point and HEALTHCHECK, the services' commands, the
 * `docker compose exec` and `kubectl exec` lines of the compose file and the deploy guides)
 * names a file the production build produces (scripts/lib/build-layout.ts): the image has
 * dist/ and no tsx.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { BUILD_OUT_DIR, WORKFLOW_BUNDLE_FILE, sourceOfBuilt } from '../../scripts/lib/build-layout';
import { loadConfig } from '../../src/config';
import { keyringOf } from '../../src/secrets';

const root = path.resolve(__dirname, '..', '..');

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string | number | boolean> | string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] | string };
}
const composeText = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
// `merge`: compose resolves `<<: *anchor` (the worker's environment extends the API's).
const compose = parse(composeText, { merge: true }) as { services: Record<string, ComposeService> };
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');

/** Lines of `text` with shell and Dockerfile `\` continuations joined. */
const joinedLines = (text: string) => text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);

/** The instructions of the Dockerfile's last stage (the image compose builds). */
function finalStage(): string[] {
  const lines = joinedLines(dockerfile);
  return lines.slice(lines.map((l) => /^\s*FROM\s/i.test(l)).lastIndexOf(true) + 1);
}

/** The JSON (exec) form of the final stage's `ENTRYPOINT […]`, or of `HEALTHCHECK … CMD […]`. */
function execForm(instruction: RegExp): string[] {
  const line = finalStage().find((l) => instruction.test(l));
  return JSON.parse(/(\[.*\])\s*$/.exec(line!)![1]!) as string[];
}

/** The ENV of the Dockerfile's last stage, `ENV A=b C="d e"` and `ENV A b` forms. */
function dockerfileEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of finalStage()) {
    const m = /^\s*ENV\s+(.*)$/i.exec(line);
    if (!m) continue;
    const body = m[1]!.trim();
    if (!body.includes('=')) {
      const [k, ...v] = body.split(/\s+/);
      env[k!] = v.join(' ');
      continue;
    }
    for (const [, k, quoted, bare] of body.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(?:"((?:[^"\\]|\\.)*)"|(\S*))/g)) env[k!] = quoted ?? bare ?? '';
  }
  return env;
}

/** A service's `environment`, map or list form, with compose's `$$` escape undone. */
function environmentOf(service: ComposeService): Record<string, string> {
  const raw = service.environment ?? {};
  const entries = Array.isArray(raw) ? raw.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]) : Object.entries(raw);
  return Object.fromEntries(entries.map(([k, v]) => [k, String(v).replace(/\$\$/g, '$')]));
}

const KEY_VOLUME = 'secrets-key';
const mountOf = (service: ComposeService) => service.volumes?.map((v) => v.split(':')).find(([source]) => source === KEY_VOLUME);

describe('docker-compose.yml', () => {
  let volume: string;
  beforeAll(() => {
    volume = mkdtempSync(path.join(os.tmpdir(), 'wfa-compose-key-'));
  });
  afterAll(() => rmSync(volume, { recursive: true, force: true }));

  /** The key service's command, run by sh with the volume's mount point mapped onto `volume`. */
  const runKeyService = () => {
    const keyService = compose.services[KEY_VOLUME]!;
    const [, target] = mountOf(keyService)!;
    const [shell, flag, script] = keyService.command as string[];
    expect([shell, flag]).toEqual(['sh', '-c']);
    return execFileSync('sh', ['-c', script!.replace(/\$\$/g, '$').replaceAll(target!, volume)], { encoding: 'utf8' });
  };

  it('generates a development keyring into its volume on the first start, and keeps it', () => {
    expect(runKeyService()).toMatch(/generated a development secrets key/);
    const file = path.join(volume, 'keyring');
    const first = readFileSync(file, 'utf8');
    expect(first).toMatch(/^dev:[A-Za-z0-9+/]{43}=\n$/);
    expect(statSync(file).mode & 0o222).toBe(0);
    expect(runKeyService()).toBe('');
    expect(readFileSync(file, 'utf8')).toBe(first);
  });

  it.each(['api', 'worker'])('gives the %s an environment that passes the configuration validation in production', (name) => {
    const service = compose.services[name]!;
    expect(service.build).toBeDefined();
    // The key comes from the volume the key service filled before this service starts, never from the file.
    expect(service.depends_on?.[KEY_VOLUME]).toEqual({ condition: 'service_completed_successfully' });
    const [, target, mode] = mountOf(service)!;
    expect(mode).toBe('ro');
    const env = { ...dockerfileEnv(), ...environmentOf(service) };
    expect(env.SECRETS_ENCRYPTION_KEY).toBeUndefined();
    expect(env.SECRETS_ENCRYPTION_KEYS).toBeUndefined();
    expect(env.SECRETS_ENCRYPTION_KEYS_FILE?.startsWith(`${target}/`)).toBe(true);

    if (!statSync(path.join(volume, 'keyring'), { throwIfNoEntry: false })) runKeyService();
    const asRun = { ...env, NODE_ENV: 'production', SECRETS_ENCRYPTION_KEYS_FILE: env.SECRETS_ENCRYPTION_KEYS_FILE!.replace(target!, volume) };
    const config = loadConfig(asRun, { requireSecretsKey: true });
    expect(config.NODE_ENV).toBe('production');
    expect(keyringOf(config).sealingKeyId).toBe('dev');
    // The image's own ENV counts: the worker loads the prebuilt bundle instead of running webpack.
    const workdir = /^\s*WORKDIR\s+(\S+)/im.exec(finalStage().join('\n'))![1]!;
    expect(config.TEMPORAL_WORKFLOW_BUNDLE_PATH).toBe(path.posix.join(workdir, BUILD_OUT_DIR, WORKFLOW_BUNDLE_FILE));
  });

  it.each(['api', 'worker'])('gives the %s a health check that reaches a port it serves', (name) => {
    const service = compose.services[name]!;
    if (service.healthcheck) return; // its own, instead of the image's
    // The image's HEALTHCHECK asks /healthz on PORT (default 3000), else on METRICS_PORT
    // (scripts/healthcheck.ts); the API serves PORT, a worker-only process only METRICS_PORT.
    const env = { ...dockerfileEnv(), ...environmentOf(service) };
    // Only the ports matter here: the keyring file is the volume's (checked above).
    const config = loadConfig({ ...env, SECRETS_ENCRYPTION_KEYS_FILE: undefined, NODE_ENV: 'development' });
    const [role] = service.command as string[];
    const asked = [Number(env.PORT ?? 3000), env.METRICS_PORT === undefined ? undefined : Number(env.METRICS_PORT)];
    const served = role === 'worker' ? config.METRICS_PORT : config.PORT;
    expect(served).toBeGreaterThan(0);
    expect(asked).toContain(served);
  });

  it('runs in the image only files the build produces, with node and never tsx', () => {
    /** Each `node <file>` in `command` names a compiled file whose source exists. */
    const expectBuilt = (command: string) => {
      expect(command).not.toMatch(/\btsx\b/);
      const files = [...command.matchAll(/\bnode\s+(?:--\S+\s+)*(\S+)/g)].map((m) => m[1]!);
      for (const file of files) {
        const source = sourceOfBuilt(file);
        expect({ file, source, exists: source !== undefined && existsSync(path.join(root, source)) }).toEqual({ file, source, exists: true });
      }
      return files.length;
    };
    expect(execForm(/^\s*ENTRYPOINT\s/i)).toEqual(['node', 'dist/src/main.js']);
    expect(expectBuilt(execForm(/^\s*ENTRYPOINT\s/i).join(' '))).toBe(1);
    expect(expectBuilt(execForm(/^\s*HEALTHCHECK\s.*\sCMD\s/i).join(' '))).toBe(1);

    for (const service of Object.values(compose.services).filter((s) => s.build !== undefined)) {
      const command = [service.command ?? []].flat();
      // Arguments to the entry point (a role), or a command of its own.
      if (command[0] !== 'node') expect(['api', 'worker', 'all']).toContain(command[0]);
      else expectBuilt(command.join(' '));
      if (service.healthcheck) expectBuilt([service.healthcheck.test].flat().join(' '));
    }

    // What the compose file's header and the guides tell users to run inside a container.
    const guides = ['docker-compose.yml', 'docs/guides/deploy.md', 'docs/deploy.md', 'deploy/helm/workflow-automation/templates/NOTES.txt'];
    for (const file of guides) {
      const inContainer = joinedLines(readFileSync(path.join(root, file), 'utf8')).filter((l) => /docker compose exec|kubectl .*exec /.test(l));
      expect({ file, commands: inContainer.map(expectBuilt).reduce((a, b) => a + b, 0) > 0 }).toEqual({ file, commands: true });
    }
  });

  it('commits no secrets key in any service', () => {
    for (const service of Object.values(compose.services)) {
      const env = environmentOf(service);
      expect(Object.keys(env).filter((k) => /^SECRETS_ENCRYPTION_KEYS?$/.test(k))).toEqual([]);
    }
  });
});
