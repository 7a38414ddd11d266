/**
 * Every fenced block marked `tested` in README.md and docs/ runs against the test service:
 *
 * - ```bash tested: a page's bash blocks run in order as one script (`set -euo pipefail`, so
 *   variables carry from block to block and any failing command fails the page) with `API`
 *   (the service's /v1 address), `BASE` (without /v1), `KEY` (an admin key of a fresh
 *   organization), `HOOK_URL` (an HTTPS receiver), `APP_SECRET`, `PHONE_NUMBER_ID` and
 *   `ACCESS_TOKEN` (accepted by the fake Graph API the service is pointed at), and
 *   `TEMPORAL_ADDRESS` (the Temporal server, its CLI on PATH). Where a page shows an untested
 *   block setting those variables for a reader, the suite sets them instead. The blocks
 *   check their own results (`jq -e`, `grep -q`, `curl --fail-with-body`).
 * - ```<js|python|go> tested receiver: a webhook receiver program. It is started with `PORT`
 *   and `WEBHOOK_SECRET`; the suite captures a real signed delivery of the service and sends
 *   it to the program: as delivered it must answer 2xx, with its body altered or its
 *   timestamp ten minutes old 401.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type FakeMeta, startFakeMeta } from '../helpers/fake-meta';
import { type CodeBlock, testedBlocks } from '../helpers/markdown-blocks';
import { freePort } from '../helpers/process';
import { waitFor } from '../helpers/wait';
import { startWebhookKit, type WebhookKit } from '../helpers/webhooks';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const PAGES = ['README.md', ...readdirSync(path.join(ROOT, 'docs', 'guides')).map((f) => `docs/guides/${f}`)].filter((f) => f.endsWith('.md'));
const PHONE_NUMBER_ID = '106540352242922';

let kit: WebhookKit;
let meta: FakeMeta;
let scratch: string;

beforeAll(async () => {
  meta = await startFakeMeta();
  kit = await startWebhookKit({
    META_GRAPH_API_URL: meta.url,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    TEMPORAL_UI_URL: 'http://localhost:8233',
  });
  scratch = mkdtempSync(path.join(tmpdir(), 'wfa-guides-'));
});
afterAll(async () => {
  await kit?.close();
  await meta?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const bashPages = PAGES.filter((page) => testedBlocks(path.join(ROOT, page), 'bash').length > 0);

it('the guides have tested blocks', () => {
  expect(bashPages.length).toBeGreaterThanOrEqual(5);
});

it.each(bashPages)('%s: its tested bash blocks run against the service', async (page) => {
  const blocks = testedBlocks(path.join(ROOT, page), 'bash');
  const script = ['set -euo pipefail', ...blocks.map((b) => `# ${page}:${b.line}\n${b.code}`)].join('\n');
  const file = path.join(scratch, `${page.replace(/\W/g, '_')}.sh`);
  writeFileSync(file, script);
  const { auth } = await kit.tenant();
  const env = {
    PATH: `${path.join(homedir(), '.cache', 'workflow-automation', 'bin')}:${process.env.PATH}`,
    HOME: process.env.HOME,
    API: `${kit.t.baseUrl}/v1`,
    BASE: kit.t.baseUrl,
    KEY: auth.Authorization!.replace(/^Bearer /, ''),
    HOOK_URL: kit.receiver.url(`/guides/${randomBytes(4).toString('hex')}`),
    APP_SECRET: randomBytes(16).toString('hex'),
    PHONE_NUMBER_ID,
    ACCESS_TOKEN: `EAAG${randomBytes(8).toString('hex')}`,
    TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    TEMPORAL_NAMESPACE: 'default',
  };
  try {
    await run('bash', [file], { env, cwd: scratch, timeout: 150_000 });
  } catch (err) {
    const { stdout, stderr } = err as { stdout: string; stderr: string };
    throw new Error(`${page}'s tested blocks failed:\n${stderr}\n--- stdout ---\n${stdout}`);
  }
});

const receivers = PAGES.flatMap((page) =>
  testedBlocks(path.join(ROOT, page))
    .filter((b) => b.flags.includes('receiver'))
    .map((b): [string, CodeBlock] => [`${page}:${b.line} (${b.lang})`, b]),
);

it('the webhook guide has a tested receiver in three languages', () => {
  expect(receivers.map(([, b]) => b.lang).sort()).toEqual(['go', 'js', 'python']);
});

/** How each language's receiver starts from its source file. */
const STARTERS: Record<string, { file: string; command: string[] }> = {
  js: { file: 'receiver.js', command: [process.execPath, 'receiver.js'] },
  python: { file: 'receiver.py', command: ['python3', 'receiver.py'] },
  go: { file: 'main.go', command: ['go', 'run', 'main.go'] },
};

async function answersOf(port: number, headers: Record<string, string>, body: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers, body });
  await res.arrayBuffer();
  return res.status;
}

it.each(receivers)('%s verifies the signature of a real delivery', async (_name, block) => {
  // A real delivery: a webhook to the test receiver, and an event it subscribes to.
  const { orgId, auth } = await kit.tenant();
  const hookPath = `/captured/${randomBytes(4).toString('hex')}`;
  const hook = await kit.createHook(auth, hookPath);
  await kit.emit(orgId, 'workflow.completed');
  const [delivery] = await kit.receiver.waitFor(hookPath, 1);
  const pick = (names: string[]) => Object.fromEntries(names.map((n) => [n, delivery!.headers[n]!]));
  const headers = pick(['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);

  const starter = STARTERS[block.lang]!;
  const dir = mkdtempSync(path.join(scratch, `${block.lang}-`));
  writeFileSync(path.join(dir, starter.file), block.code);
  const port = await freePort();
  const child: ChildProcess = spawn(starter.command[0]!, starter.command.slice(1), {
    cwd: dir,
    env: { ...process.env, PORT: String(port), WEBHOOK_SECRET: hook.secret },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A process group of its own: `go run` starts the compiled program as a child, killed with it.
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  try {
    await waitFor(
      async () => (child.exitCode !== null ? Promise.reject(new Error(`the receiver exited:\n${output}`)) : answersOf(port, headers, delivery!.body).catch(() => undefined)),
      `the ${block.lang} receiver to listen`,
      90_000,
    );
    expect(await answersOf(port, headers, delivery!.body)).toBeLessThan(300);
    expect(await answersOf(port, headers, delivery!.body.replace('"workflow.completed"', '"workflow.failed"'))).toBe(401);
    const stale = String(Math.floor(Date.now() / 1000) - 600);
    const staleSignature = createHmac('sha256', hook.secret).update(`${headers['webhook-id']}.${stale}.${delivery!.body}`).digest('base64');
    expect(await answersOf(port, { ...headers, 'webhook-timestamp': stale, 'webhook-signature': `v1,${staleSignature}` }, delivery!.body)).toBe(401);
  } finally {
    process.kill(-child.pid!, 'SIGKILL');
  }
});
