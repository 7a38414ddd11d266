/**
 * The OpenAPI document as a contract for generated clients: it passes a standard linter
 * (Redocly), the committed TypeScript client matches it, and the headers it promises on
 * answers given before authentication are the ones served.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';

let t: TestApp;
let doc: Record<string, unknown>;
beforeAll(async () => {
  t = await createTestApp();
  doc = (await t.request.get('/v1/openapi.json')).body;
});
afterAll(() => t.close());

test('the document lints clean with Redocly: valid examples, an operationId everywhere, no warnings', async () => {
  const config = await createConfig({
    extends: ['recommended'],
    rules: {
      'no-invalid-schema-examples': 'error',
      'no-invalid-media-type-examples': 'error',
      'operation-operationId': 'error',
      // The server URL is PUBLIC_BASE_URL, localhost in a development or test run.
      'no-server-example.com': 'off',
      // /healthz, /readyz and /metrics have no client errors to describe.
      'operation-4xx-response': 'off',
      // GET /oauth/authorize is a browser redirect: it answers 303 (to sign-in, or back to the client) or an
      // HTML 400 (also the response_mode=form_post error page); no 2XX answer exists to document.
      'operation-2xx-response': 'off',
      // WebhookEvent (any delivery) is published for receivers; no operation returns it.
      'no-unused-components': 'off',
    },
  });
  const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
  expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
});

test('the committed TypeScript client is generated from the live document (run `npm run client:generate` when this fails)', async () => {
  // openapi-typescript is ESM inside, which jest cannot load: the script runs in a child process.
  const dir = await mkdtemp(path.join(tmpdir(), 'wfa-client-'));
  try {
    await writeFile(path.join(dir, 'openapi.json'), JSON.stringify(doc));
    const root = path.join(__dirname, '..', '..', '..');
    const args = ['--require', 'tsx/cjs', 'scripts/generate-client.ts', '--document', path.join(dir, 'openapi.json'), '--out', path.join(dir, 'schema.ts')];
    await promisify(execFile)(process.execPath, args, { cwd: root });
    const committed = await readFile(path.join(root, 'clients', 'typescript', 'schema.ts'), 'utf8');
    expect(await readFile(path.join(dir, 'schema.ts'), 'utf8')).toBe(committed);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

describe('limit headers: absent on answers given before authentication, present on every 400', () => {
  const limitHeaders = (headers: Record<string, string>) => Object.keys(headers).filter((h) => h.startsWith('x-ratelimit-'));

  test('401, 413 and 415 carry X-Request-Id but no X-RateLimit-*, as documented', async () => {
    const { key } = await t.createKey('admin');
    const answers = [
      await t.request.get('/v1/workflows'),
      await t.request.post('/v1/workflows').set(bearer(key)).set('Content-Type', 'application/json').send(`{"name":"${'x'.repeat(1024 * 1024)}"}`),
      await t.request.post('/v1/workflows').set(bearer(key)).set('Content-Type', 'text/plain').send('hello'),
    ];
    expect(answers.map((r) => [r.status, r.body.error.code, limitHeaders(r.headers), typeof r.headers['x-request-id']])).toEqual([
      [401, 'MISSING_AUTHENTICATION', [], 'string'],
      [413, 'PAYLOAD_TOO_LARGE', [], 'string'],
      [415, 'UNSUPPORTED_MEDIA_TYPE', [], 'string'],
    ]);
    const create = (doc.paths as Record<string, Record<string, { responses: Record<string, { headers: Record<string, unknown> }> }>>)['/v1/workflows']!.post!;
    for (const status of ['401', '413', '415']) expect(Object.keys(create.responses[status]!.headers).filter((h) => h.startsWith('X-RateLimit-'))).toEqual([]);
  });

  test('every 400 of POST /v1/workflows, malformed JSON and NUL characters included, carries the X-RateLimit-* headers it declares', async () => {
    const { key } = await t.createKey('admin');
    const post = (body: string) => t.request.post('/v1/workflows').set(bearer(key)).set('Content-Type', 'application/json').send(body);
    const answers = [
      await post('{"name":'),
      await post('{"name":"A\\u0000"}'),
      await post(`${'['.repeat(40)}${']'.repeat(40)}`),
      await post('{}'),
      await t.request.post('/v1/workflows?x=%00').set(bearer(key)).send({ name: 'A', channel: 'voice' }),
    ];
    expect(answers.map((r) => [r.status, r.body.error.code, limitHeaders(r.headers).sort()])).toEqual(
      answers.map(() => [400, expect.stringMatching(/^(INVALID_REQUEST|MISSING_REQUIRED_FIELD)$/), ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']]),
    );
    // Each was counted: the remaining budget went down by one per answer.
    const remaining = answers.map((r) => Number(r.headers['x-ratelimit-remaining']));
    expect(remaining).toEqual(remaining.map((_, i) => remaining[0]! - i));
    const create = (doc.paths as Record<string, Record<string, { responses: Record<string, { headers: Record<string, { $ref?: string; required?: boolean }> }> }>>)['/v1/workflows']!.post!;
    for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
      expect(create.responses['400']!.headers[name]).toEqual({ $ref: `#/components/headers/${name}` });
    }
  });

  test('a validation 400 after authentication carries them', async () => {
    const { key } = await t.createKey('admin');
    const res = await t.request.post('/v1/workflows').set(bearer(key)).send({ name: '' });
    expect(res.status).toBe(400);
    expect(limitHeaders(res.headers).sort()).toEqual(['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']);
  });
});
