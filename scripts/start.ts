/**
 * `npm start`: everything a fresh machine needs to run the service locally.
 * 1. Validates the configuration.
 * 2. Unless TEMPORAL_ADDRESS names a server: finds (or installs) the Temporal CLI and runs
 *    its dev server with a persistent SQLite file under .data/ and the Web UI; where no
 *    CLI can be had, the SDK downloads a dev server instead. A Temporal already answering
 *    on the default port (an earlier `npm start`) is reused.
 * 3. Registers the search attributes, then runs the API and the worker (src/main.ts all),
 *    which create the database if missing and apply migrations.
 * Ctrl-C / SIGTERM stops the service first (it drains), then the dev server.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ConfigError, loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { temporalAnswersAt } from '../src/temporal-client';
import { searchAttributeCliArgs } from '../temporal/shared';
import { findOrInstallTemporalCli } from './lib/temporal-cli';
import { ensureSearchAttributes } from '../src/temporal-search-attributes';
import { startTemporalDevServer } from './lib/temporal-dev-server';
import { generateSecretsKey } from '../src/secrets';

// The same JSON lines as the service it starts, so the console reads in one format.
const logger = createLogger('info').child({ component: 'start' });
const log = (msg: string) => logger.info(msg);
const DEV_SERVER_PORT = 7233;

/** Returns the address of a Temporal server to use and how to stop it (if we started it). */
interface LocalTemporal {
  address: string;
  /** Web UI address when this script started the server. */
  ui?: string;
  stop(): Promise<void>;
}

async function ensureTemporal(uiPort: number, namespace: string): Promise<LocalTemporal> {
  const address = `127.0.0.1:${DEV_SERVER_PORT}`;
  if (await temporalAnswersAt(address)) {
    log(`reusing the Temporal server already answering at ${address}`);
    return { address, stop: async () => undefined };
  }
  const dataDir = path.resolve(__dirname, '..', '.data');
  mkdirSync(dataDir, { recursive: true });
  const dbFile = path.join(dataDir, 'temporal.sqlite');
  const executable = await findOrInstallTemporalCli(log);
  if (executable) {
    log(`starting the Temporal dev server (${executable}), data in ${dbFile}`);
    const server = await startTemporalDevServer({ executable, dbFile, port: DEV_SERVER_PORT, uiPort, namespace, log });
    return { address: server.address, ui: `http://localhost:${uiPort}`, stop: () => server.stop() };
  }
  log('no Temporal CLI available: letting the Temporal SDK download a dev server');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: '127.0.0.1',
      port: DEV_SERVER_PORT,
      ui: true,
      uiPort,
      dbFilename: dbFile,
      namespace,
      extraArgs: searchAttributeCliArgs(),
    },
  });
  return { address: env.address, ui: `http://localhost:${uiPort}`, stop: () => env.teardown() };
}

/**
 * Development only: the key sealing stored secrets, kept in .data/ so that secrets stored by
 * one `npm start` open in the next. Elsewhere SECRETS_ENCRYPTION_KEYS (or SECRETS_ENCRYPTION_KEY) is set: the API and
 * the worker refuse to start without it.
 */
function developmentSecretsKey(): string {
  const dataDir = path.resolve(__dirname, '..', '.data');
  const file = path.join(dataDir, 'secrets-encryption-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const key = generateSecretsKey();
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  log(`generated a development SECRETS_ENCRYPTION_KEY in ${file}`);
  return key;
}

async function main() {
  const env = process.env;
  const hasKey = env.SECRETS_ENCRYPTION_KEYS || env.SECRETS_ENCRYPTION_KEYS_FILE || env.SECRETS_ENCRYPTION_KEY;
  if (!hasKey && env.NODE_ENV !== 'production') env.SECRETS_ENCRYPTION_KEY = developmentSecretsKey();
  const config = loadConfig();
  let temporal: LocalTemporal | undefined;
  if (config.TEMPORAL_ADDRESS) {
    await ensureSearchAttributes(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE);
  } else {
    temporal = await ensureTemporal(config.TEMPORAL_UI_PORT, config.TEMPORAL_NAMESPACE);
    await ensureSearchAttributes(temporal.address, config.TEMPORAL_NAMESPACE);
  }
  const temporalAddress = config.TEMPORAL_ADDRESS ?? temporal!.address;

  // tsx's loader, not its CLI: the CLI relays signals and SIGKILLs a child that is slow to
  // acknowledge one (busy event loop), which would cut the drain short.
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', 'src', 'main.ts'), 'all'], {
    // The API links its responses to the runs in the local Web UI, unless told another one.
    env: { ...process.env, TEMPORAL_ADDRESS: temporalAddress, ...(temporal?.ui && !process.env.TEMPORAL_UI_URL ? { TEMPORAL_UI_URL: temporal.ui } : {}) },
    stdio: 'inherit',
  });
  log(`API:         ${config.BASE_URL}/v1  (health: ${config.BASE_URL}/healthz)`);
  log(`API docs:    ${config.BASE_URL}/docs  (OpenAPI: ${config.BASE_URL}/v1/openapi.json)`);
  log(`Temporal:    ${temporalAddress}` + (temporal?.ui ? `  (Web UI: ${temporal.ui})` : ''));
  log('create a first admin key: npm run cli -- api-keys create --org <org> --name <name> --permission admin');

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping the service, then Temporal`);
    child.kill(signal);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  const code = await new Promise<number>((resolve) => child.once('exit', (c) => resolve(c ?? 0)));
  await temporal?.stop();
  process.exit(stopping ? 0 : code);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).stack}\n`);
  process.exit(1);
});
