/**
 * The typed client as a package (clients/typescript): `npm pack` builds it (tsc: CommonJS
 * and declarations), the tarball installs into a scratch project like any dependency, the
 * README's walkthrough compiles there under `--strict` (no casts), and, compiled, it runs
 * against the service with a worker and prints the steps of the finished conversation.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createActivities } from '../../temporal/activities';
import { createTestApp, type TestApp } from '../helpers/app';
import { testedBlocks } from '../helpers/markdown-blocks';
import { startTestWorker, type TestWorker } from '../helpers/temporal';

jest.setTimeout(300_000);

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
const CLIENT_DIR = path.join(ROOT, 'clients', 'typescript');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let scratch: string;
let t: TestApp;
let worker: TestWorker;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'wfa-client-'));
  t = await createTestApp();
  worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
});
afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await rm(scratch, { recursive: true, force: true });
});

const example = testedBlocks(path.join(CLIENT_DIR, 'README.md'), 'ts');

test('the README has one walkthrough, with no casts', () => {
  expect(example).toHaveLength(1);
  const code = example[0]!.code;
  expect(code).not.toMatch(/\bas (?!const\b)\w/); // `as const` is a literal type, not a cast
  expect(code).not.toMatch(/\bany\b|@ts-|[\w)\]]!\./);
});

test('npm pack → npm install → tsc --strict → the walkthrough runs against the service', async () => {
  const packed = await run('npm', ['pack', '--pack-destination', scratch], { cwd: CLIENT_DIR });
  const tarball = packed.stdout.trim().split('\n').pop()!;
  expect(tarball).toBe('workflow-automation-client-0.1.0.tgz');

  await writeFile(path.join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
  await writeFile(
    path.join(scratch, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, types: ['node'], outDir: 'out' },
      files: ['walkthrough.ts'],
    }),
  );
  await writeFile(path.join(scratch, 'walkthrough.ts'), example[0]!.code);
  // The registry serves openapi-fetch and @types/node; the local cache is used when it has them.
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`, '@types/node@20'], { cwd: scratch });
  expect(await readdir(path.join(scratch, 'node_modules', '@workflow-automation', 'client', 'dist'))).toEqual(
    expect.arrayContaining(['index.js', 'index.d.ts', 'schema.d.ts']),
  );

  const compiled = await run(process.execPath, [TSC, '-p', scratch], { cwd: scratch }).catch((err: { stdout: string }) => {
    throw new Error(`tsc --strict failed on the README walkthrough:\n${err.stdout}`);
  });
  expect(compiled.stdout).toBe('');

  const walked = await run(process.execPath, [path.join(scratch, 'out', 'walkthrough.js')], {
    cwd: scratch,
    env: { ...process.env, WFA_BASE_URL: t.baseUrl, WFA_API_KEY: (await t.createKey('admin')).key },
  });
  expect(walked.stdout.trim().split('\n')).toEqual(['hi message completed', 'ask form completed', 'form data: {"ask":{"email":"ada@example.com"}}']);
});
