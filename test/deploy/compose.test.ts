/**
 * `docker compose up --build` starts the API and the worker: their environment in
 * docker-compose.yml, over the image's own (the Dockerfile's ENV lines of its final stage),
 * passes the service's configuration validation (loadConfig, src/config.ts) with
 * NODE_ENV=production. The development secrets key is generated on the first start by the
 * compose file's `secrets-key` service: its command is run here, as the container runs it,
 * into a directory standing for the volume; no key is written in the file itself.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
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
}
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8')) as { services: Record<string, ComposeService> };

/** The ENV of the Dockerfile's last stage (the image compose builds), `ENV A=b C="d e"` and `ENV A b` forms. */
function dockerfileEnv(): Record<string, string> {
  const text = readFileSync(path.join(root, 'Dockerfile'), 'utf8').replace(/\\\r?\n/g, ' ');
  const lines = text.split(/\r?\n/);
  const lastFrom = lines.map((l) => /^\s*FROM\s/i.test(l)).lastIndexOf(true);
  const env: Record<string, string> = {};
  for (const line of lines.slice(lastFrom + 1)) {
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
  });

  it('commits no secrets key in any service', () => {
    for (const service of Object.values(compose.services)) {
      const env = environmentOf(service);
      expect(Object.keys(env).filter((k) => /^SECRETS_ENCRYPTION_KEYS?$/.test(k))).toEqual([]);
    }
  });
});
