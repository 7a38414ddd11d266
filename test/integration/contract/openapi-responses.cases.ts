/**
 * Every operation of the OpenAPI document, exercised through real requests (successes and
 * the main errors) whose status, body and headers are validated against the document. It
 * fails when the service serves something undocumented and when a documented operation is
 * never called. A new route adds its calls to CALLS; the coverage test names what is missing.
 */
import { createHash, randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair } from 'jose';
import type { Response } from 'supertest';
import { signBody, SIGNATURE_HEADER } from '../../../src/http/signature';
import { createActivities } from '../../../temporal/activities';
import { hubSignature, whatsAppText } from '../../helpers/fake-meta';
import { twilioSignature } from '../../helpers/fake-twilio';
import { bearer, createTestApp, type TestApp } from '../../helpers/app';
import { createUser, signInAndConsent } from '../../helpers/oauth';
import { OpenApiContract } from '../../helpers/openapi-contract';
import { startTestWorker, type TestWorker } from '../../helpers/temporal';
import { waitFor } from '../../helpers/wait';
import { waitForStatus } from '../../reports/helpers';

let t: TestApp;
let worker: TestWorker;
let contract: OpenApiContract;
let admin: string;
let reader: string;
const problems: string[] = [];

interface CallOptions {
  /** An API key; null sends no Authorization header. Default: the admin key. */
  key?: string | null;
  body?: unknown;
  /** A form-encoded body (the OAuth endpoints). */
  form?: Record<string, string>;
  headers?: Record<string, string>;
}

/** One request, checked against the document; every response of this file goes through here. */
async function call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, opts: CallOptions = {}): Promise<Response> {
  let req = t.request[method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'](path);
  const key = opts.key === undefined ? admin : opts.key;
  if (key !== null) req = req.set(bearer(key));
  for (const [name, value] of Object.entries(opts.headers ?? {})) req = req.set(name, value);
  if (opts.form) req = req.type('form').send(new URLSearchParams(opts.form).toString());
  else if (opts.body !== undefined) req = req.send(opts.body as object);
  const res = await req;
  problems.push(...contract.check(method, path, { status: res.status, headers: res.headers, text: res.text }));
  return res;
}

/**
 * An endless response (Server-Sent Events): status and headers are checked as they arrive,
 * then the stream is closed; the body is never complete, so it is not validated.
 */
async function callStream(path: string): Promise<{ status: number; contentType: string }> {
  const abort = new AbortController();
  const res = await fetch(`${t.config.BASE_URL}${path}`, { headers: bearer(admin), signal: abort.signal });
  abort.abort();
  const headers = Object.fromEntries(res.headers);
  problems.push(...contract.check('GET', path, { status: res.status, headers, text: '' }));
  return { status: res.status, contentType: headers['content-type'] ?? '' };
}

/** Ids created by earlier calls, for later ones. */
const s: Record<string, string> = {};
const expectStatus = (res: Response, status: number) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status} ${res.text}`);
  return res.body;
};

/** Unchecked polling (the checked calls are the ones under test). */
const waitForOutput = (executionId: string, nextAction: string) =>
  waitFor(async () => {
    const res = await t.request.get(`/v1/workflows/${s.workflow}/executions/${executionId}`).set(bearer(admin));
    return res.body.data?.output?.next_action === nextAction || undefined;
  }, `execution ${executionId} to reach next_action ${nextAction}`);

const REDIRECT = 'https://client.example/callback';

const GREETER = {
  name: 'Greeter',
  channel: 'whatsapp',
  configuration: {
    trigger: { type: 'keyword', keywords: ['hello'] },
    nodes: [
      { id: 'hi', type: 'message', content: 'Hi! How can we help?', next: 'ask' },
      { id: 'ask', type: 'form', fields: [{ name: 'email', type: 'email', required: true, label: 'Your email?' }] },
    ],
  },
};

/**
 * The table of calls, run in order. Each entry names what it shows; later entries use the
 * ids earlier ones stored in `s`. Add a new route's calls here (a success and its errors).
 */
const CALLS: Array<[string, () => Promise<unknown>]> = [
  ['operations', async () => {
    expectStatus(await call('GET', '/healthz', { key: null }), 200);
    expectStatus(await call('GET', '/readyz', { key: null }), 200);
    expectStatus(await call('GET', '/metrics', { key: null }), 200);
  }],
  ['api keys and identity', async () => {
    expectStatus(await call('GET', '/v1/me'), 200);
    s.key = expectStatus(await call('POST', '/v1/api-keys', { body: { name: 'ci', permission: 'read' } }), 201).data.id;
    expectStatus(await call('POST', '/v1/api-keys', { body: { name: 'ci', permission: 'owner' } }), 400);
    expectStatus(await call('GET', '/v1/api-keys?page=1&limit=5'), 200);
    expectStatus(await call('GET', `/v1/api-keys/${s.key}`), 200);
    expectStatus(await call('DELETE', `/v1/api-keys/${s.key}`), 200);
    expectStatus(await call('GET', `/v1/api-keys/${s.key}x`), 404);
  }],
  ['workflows', async () => {
    s.workflow = expectStatus(await call('POST', '/v1/workflows', { body: GREETER, headers: { 'Idempotency-Key': 'create-greeter' } }), 201).data.id;
    const replay = await call('POST', '/v1/workflows', { body: GREETER, headers: { 'Idempotency-Key': 'create-greeter' } });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expectStatus(await call('POST', '/v1/workflows', { body: { ...GREETER, name: 'Other' }, headers: { 'Idempotency-Key': 'create-greeter' } }), 409);
    expectStatus(await call('POST', '/v1/workflows', { body: GREETER }), 409);
    expectStatus(await call('POST', '/v1/workflows', { body: { name: 'Bad', channel: 'whatsapp', configuration: { nodes: [{ id: 'a', type: 'message' }] } } }), 422);
    expectStatus(await call('POST', '/v1/workflows', { body: { channel: 'whatsapp' } }), 400);
    expectStatus(await call('GET', '/v1/workflows?page=1&limit=10&status=draft'), 200);
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}`), 200);
    expectStatus(await call('PUT', `/v1/workflows/${s.workflow}`, { body: { description: 'Greets and asks for an email' } }), 200);
    expectStatus(await call('POST', `/v1/workflows/${s.workflow}/deactivate`), 200);
    expectStatus(await call('POST', `/v1/workflows/${s.workflow}/activate`), 200);
    const draft = expectStatus(await call('POST', '/v1/workflows', { body: { name: 'Draft', channel: 'voice' } }), 201).data.id;
    expectStatus(await call('POST', `/v1/workflows/${draft}/activate`), 400);
    expectStatus(await call('DELETE', `/v1/workflows/${draft}`), 200);
  }],
  ['messages, executions and customers', async () => {
    const inbound = expectStatus(await call('POST', '/v1/messages', { body: { channel: 'whatsapp', customer_id: '+15550001', message: 'hello' } }), 201).data;
    s.execution = inbound.executions[0].id;
    s.customer = inbound.customer_id;
    await waitForOutput(s.execution!, 'wait_for_input');
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/executions?status=running&start_date=2020-01-01`), 200);
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/executions?start_date=2026-02-01&end_date=2026-01-01`), 400);
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/executions/${s.execution}`), 200);
    expectStatus(await call('POST', `/v1/workflows/${s.workflow}/executions/${s.execution}/retry`), 409);
    expectStatus(await call('POST', `/v1/workflows/${s.workflow}/executions/${s.execution}/cancel`), 200);
    expectStatus(await call('POST', `/v1/workflows/${s.workflow}/executions/${s.execution}/cancel`), 409);
    const retried = expectStatus(await call('POST', `/v1/workflows/${s.workflow}/executions/${s.execution}/retry`), 201).data.id;
    s.retried = retried;
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/executions/${s.execution}`), 200);
    // The retry asks again; a reply completes it, so a finished form execution is validated too.
    await waitForOutput(retried, 'wait_for_input');
    expectStatus(await call('POST', '/v1/messages', { body: { channel: 'whatsapp', customer_id: '+15550001', message: 'ada@example.com' } }), 201);
    await waitForOutput(retried, 'end');
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/executions/${retried}`), 200);
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/metrics?granularity=day`), 200);
    expectStatus(await call('GET', `/v1/workflows/${s.workflow}/metrics?granularity=year`), 422);
    expectStatus(await call('GET', '/v1/customers?channel=whatsapp'), 200);
    expectStatus(await call('GET', `/v1/customers/${s.customer}`), 200);
    expectStatus(await call('POST', `/v1/customers/${s.customer}/messages`, { body: { text: 'A person writes' } }), 202);
    expectStatus(await call('POST', `/v1/customers/${s.customer}/messages`, { body: { text: 'Elsewhere', channel: 'instagram' } }), 422);
    expectStatus(await call('GET', `/v1/customers/${s.customer}/messages`), 200);
    // A handoff: started, moved, shown, silencing a message, refused in the past, ended once.
    expectStatus(await call('POST', `/v1/customers/${s.customer}/handoff`, { body: { reason: 'A person answers' } }), 201);
    expectStatus(await call('POST', `/v1/customers/${s.customer}/handoff`, { body: { reason: 'Moved' } }), 200);
    expectStatus(await call('POST', `/v1/customers/${s.customer}/handoff`, { body: { until: '2020-01-01T00:00:00Z' } }), 400);
    expectStatus(await call('GET', `/v1/customers/${s.customer}`), 200);
    expectStatus(await call('GET', '/v1/customers'), 200);
    expectStatus(await call('POST', '/v1/messages', { body: { channel: 'whatsapp', customer_id: '+15550001', message: 'hello' } }), 201);
    expectStatus(await call('DELETE', `/v1/customers/${s.customer}/handoff`), 200);
    expectStatus(await call('DELETE', `/v1/customers/${s.customer}/handoff`), 404);
  }],
  ['dry runs', async () => {
    const [hi, ask] = GREETER.configuration.nodes;
    const draft = { ...GREETER.configuration, nodes: [{ ...hi, content: 'Hello there!' }, ask] };
    const path = `/v1/workflows/${s.workflow}/dry-runs`;
    const created = expectStatus(await call('POST', path, { body: { filter: { status: 'success' }, configuration: draft } }), 201).data;
    await waitFor(async () => {
      const res = await t.request.get(`${path}/${created.id}`).set(bearer(admin));
      return res.body.data?.status === 'completed' || undefined;
    }, 'dry run to complete');
    expectStatus(await call('GET', `${path}/${created.id}`), 200);
    expectStatus(await call('GET', `${path}?status=completed`), 200);
    expectStatus(await call('GET', `${path}/dry_missing`), 404);
    expectStatus(await call('POST', path, { body: { execution_ids: ['exec_missing'] } }), 404);
    expectStatus(await call('POST', path, { body: { execution_ids: [s.execution], revision: 99 } }), 404);
    expectStatus(await call('POST', path, { body: { execution_ids: [s.execution], configuration: { nodes: [] } } }), 400);
    expectStatus(await call('POST', path, { body: { execution_ids: [s.execution], configuration: { nodes: [{ id: 'm', type: 'message' }] } } }), 422);
  }],
  ['bulk replays', async () => {
    // A successful execution named by id is skipped: the replay completes without starting a conversation.
    const created = expectStatus(await call('POST', '/v1/replays', { body: { filter: { execution_ids: [s.retried] }, rate_per_second: 10 } }), 201).data;
    await waitFor(async () => {
      const res = await t.request.get(`/v1/replays/${created.id}`).set(bearer(admin));
      return res.body.data?.status === 'completed' || undefined;
    }, 'replay to complete');
    expectStatus(await call('GET', `/v1/replays/${created.id}`), 200);
    expectStatus(await call('GET', '/v1/replays?status=completed'), 200);
    expectStatus(await call('POST', `/v1/replays/${created.id}/cancel`), 409);
    expectStatus(await call('GET', '/v1/replays/rpl_missing'), 404);
    expectStatus(await call('POST', '/v1/replays', { body: { filter: { execution_ids: ['exec_missing'] } } }), 404);
    expectStatus(await call('POST', '/v1/replays', { body: { filter: {} } }), 400);
    // A replay still running (recorded as started, so no worker picks it up) to cancel.
    await t.query(
      `insert into replays (id, organization_id, filter, rate_per_second, revision, status, matched, cutoff, temporal_started_at)
       select 'rpl_openapi', organization_id, filter, 5, 'current', 'running', 0, now(), now() from replays where id = ?`,
      [created.id],
    );
    expectStatus(await call('POST', '/v1/replays/rpl_openapi/cancel'), 200);
  }],
  ['channels', async () => {
    // An http connection to the service itself: its test gets an answer without leaving the machine.
    const body = { type: 'http', name: 'Bridge', config: { url: `${t.baseUrl}/healthz`, channel: 'whatsapp' } };
    const channel = expectStatus(await call('POST', '/v1/channels', { body }), 201).data.id;
    expectStatus(await call('POST', '/v1/channels', { body }), 409);
    expectStatus(await call('POST', '/v1/channels', { body: { type: 'http', name: 'Bad' } }), 400);
    expectStatus(await call('GET', '/v1/channels'), 200);
    expectStatus(await call('GET', `/v1/channels/${channel}`), 200);
    expectStatus(await call('PUT', `/v1/channels/${channel}`, { body: { name: 'Bridge 2' } }), 200);
    expectStatus(await call('POST', `/v1/channels/${channel}/rotate-verify-token`), 200);
    expectStatus(await call('POST', `/v1/channels/${channel}/test`), 200);
    expectStatus(await call('DELETE', `/v1/channels/${channel}`), 200);
    // A WhatsApp connection's hook: the handshake and signed deliveries (nothing leaves the machine).
    const wa = expectStatus(
      await call('POST', '/v1/channels', { body: { type: 'whatsapp_cloud', name: 'WA', config: { phone_number_id: '1065403', access_token: 'tok', app_secret: 'app-secret' } } }),
      201,
    ).data;
    const hook = `/hooks/channels/${wa.id}`;
    const query = (token: string) => `?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=42`;
    expectStatus(await call('GET', `${hook}${query(wa.verify_token)}`, { key: null }), 200);
    expectStatus(await call('GET', `${hook}${query('wrong')}`, { key: null }), 403);
    expectStatus(await call('GET', `/hooks/channels/chn_missing${query('x')}`, { key: null }), 404);
    const payload = JSON.stringify(whatsAppText('1065403', '15550007777', 'hello').body);
    const signed = { 'Content-Type': 'application/json', 'X-Hub-Signature-256': hubSignature('app-secret', payload) };
    expectStatus(await call('POST', hook, { key: null, body: payload, headers: signed }), 200);
    expectStatus(await call('POST', hook, { key: null, body: payload, headers: { ...signed, 'X-Hub-Signature-256': 'sha256=00' } }), 401);
    const odd = JSON.stringify({ hello: 'world' });
    expectStatus(await call('POST', hook, { key: null, body: odd, headers: { ...signed, 'X-Hub-Signature-256': hubSignature('app-secret', odd) } }), 400);
    expectStatus(await call('POST', '/hooks/channels/chn_missing', { key: null, body: payload, headers: signed }), 404);
    // A Twilio voice connection's hook: a signed call with no voice workflow is answered with TwiML.
    const line = expectStatus(
      await call('POST', '/v1/channels', { body: { type: 'twilio_voice', name: 'Line', config: { account_sid: `AC${'0'.repeat(32)}`, auth_token: 'auth-token', phone_number: '+14155550100' } } }),
      201,
    ).data;
    const callParams = { CallSid: `CA${'1'.repeat(32)}`, From: '+14155550199', To: '+14155550100', CallStatus: 'ringing' };
    const voiceHook = new URL(line.webhook_url).pathname;
    const twilioSigned = { 'X-Twilio-Signature': twilioSignature('auth-token', line.webhook_url, callParams) };
    expectStatus(await call('POST', voiceHook, { key: null, form: callParams, headers: twilioSigned }), 200);
    expectStatus(await call('POST', voiceHook, { key: null, form: callParams, headers: { 'X-Twilio-Signature': 'AAAA' } }), 403);
    // The voice URL numbers were configured with before the one hook: an alias, signed over its own URL.
    const aliasUrl = line.webhook_url.replace('/hooks/channels/', '/hooks/voice/');
    const aliasParams = { ...callParams, CallSid: `CA${'2'.repeat(32)}` };
    const aliasSigned = { 'X-Twilio-Signature': twilioSignature('auth-token', aliasUrl, aliasParams) };
    expectStatus(await call('POST', new URL(aliasUrl).pathname, { key: null, form: aliasParams, headers: aliasSigned }), 200);
    expectStatus(await call('POST', '/hooks/voice/chn_missing', { key: null, form: callParams, headers: twilioSigned }), 404);
  }],
  ['knowledge bases', async () => {
    const kb = expectStatus(await call('POST', '/v1/knowledge-bases', { body: { name: 'FAQ' } }), 201).data.id;
    expectStatus(await call('POST', '/v1/knowledge-bases', { body: { name: 'FAQ' } }), 409);
    expectStatus(await call('GET', '/v1/knowledge-bases'), 200);
    expectStatus(await call('GET', `/v1/knowledge-bases/${kb}`), 200);
    expectStatus(await call('PUT', `/v1/knowledge-bases/${kb}`, { body: { description: 'Answers' } }), 200);
    const article = expectStatus(await call('POST', `/v1/knowledge-bases/${kb}/articles`, { body: { title: 'Hours', content: 'We open at 9.' } }), 201).data.id;
    expectStatus(await call('GET', `/v1/knowledge-bases/${kb}/articles`), 200);
    expectStatus(await call('GET', `/v1/knowledge-bases/${kb}/articles/${article}`), 200);
    expectStatus(await call('PUT', `/v1/knowledge-bases/${kb}/articles/${article}`, { body: { content: 'We open at 10.' } }), 200);
    expectStatus(await call('DELETE', `/v1/knowledge-bases/${kb}/articles/${article}`), 200);
    expectStatus(await call('DELETE', `/v1/knowledge-bases/${kb}`), 200);
  }],
  ['webhooks', async () => {
    const body = { url: 'https://127.0.0.1:9/hooks', events: ['workflow.completed'], retry_policy: { max_retries: 0 } };
    const hook = expectStatus(await call('POST', '/v1/webhooks', { body }), 201).data.id;
    expectStatus(await call('POST', '/v1/webhooks', { body }), 409);
    expectStatus(await call('POST', '/v1/webhooks', { body: { url: 'http://example.com', events: ['workflow.completed'] } }), 400);
    expectStatus(await call('GET', '/v1/webhooks?active=true'), 200);
    expectStatus(await call('GET', '/v1/webhooks/event-types'), 200);
    expectStatus(await call('GET', `/v1/webhooks/${hook}`), 200);
    expectStatus(await call('PUT', `/v1/webhooks/${hook}`, { body: { retry_policy: { max_retries: 2, retry_delay_ms: 500 } } }), 200);
    expectStatus(await call('POST', `/v1/webhooks/${hook}/test`, { body: { event_type: 'workflow.completed' } }), 200);
    expectStatus(await call('POST', `/v1/webhooks/${hook}/rotate-secret`, { body: {} }), 200);
    expectStatus(await call('POST', `/v1/webhooks/${hook}/rotate-secret`, { body: { secret: 'short' } }), 400);
    expectStatus(await call('GET', `/v1/webhooks/${hook}/logs`), 200);
    expectStatus(await call('POST', `/v1/webhooks/${hook}/logs/whlog_missing/redeliver`), 404);
    // A failed delivery of one of the organization's stored events, to redeliver.
    await t.query(
      `insert into webhook_logs (id, webhook_id, organization_id, event_id, event_type, status, response_code, response_time_ms, attempt)
       select 'whlog_openapi', w.id, w.organization_id, e.id, e.type, 'failed', 500, 12, 1
         from webhooks w join events e on e.organization_id = w.organization_id where w.id = ? limit 1`,
      [hook],
    );
    expectStatus(await call('POST', `/v1/webhooks/${hook}/logs/whlog_openapi/redeliver`), 200);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const recovery = expectStatus(await call('POST', `/v1/webhooks/${hook}/recover`, { body: { since, status: 'failed' } }), 202).data.id;
    expectStatus(await call('POST', `/v1/webhooks/${hook}/recover`, { body: { since, until: since } }), 400);
    expectStatus(await call('GET', `/v1/webhooks/${hook}/recoveries/${recovery}`), 200);
    expectStatus(await call('GET', `/v1/webhooks/${hook}/recoveries/whr_missing`), 404);
    expectStatus(await call('PUT', `/v1/webhooks/${hook}`, { body: { active: false, rate_limit: 5 } }), 200);
    expectStatus(await call('POST', `/v1/webhooks/${hook}/recover`, { body: { since } }), 422);
    expectStatus(await call('DELETE', `/v1/webhooks/${hook}`), 200);
  }],
  ['triggers of every type', async () => {
    const create = (body: object) => call('POST', '/v1/triggers', { body: { workflow_id: s.workflow, ...body } });
    s.messageTrigger = expectStatus(await create({ name: 'Hi', type: 'message', configuration: { keywords: ['hi'] } }), 201).data.id;
    expectStatus(await create({ name: 'Hi', type: 'message', configuration: { keywords: ['hi'] } }), 409);
    expectStatus(await create({ name: 'Empty', type: 'message', configuration: { keywords: [] } }), 400);
    expectStatus(await create({ name: 'Bad cron', type: 'schedule', configuration: { cron_expression: '* *' } }), 422);
    expectStatus(await create({ name: 'Nightly', type: 'schedule', configuration: { cron_expression: '0 3 * * *', timezone: 'Europe/Paris' } }), 201);
    s.apiTrigger = expectStatus(await create({ name: 'Api', type: 'api', configuration: { rate_limit: 1 } }), 201).data.id;
    const hook = expectStatus(await create({ name: 'Hook', type: 'webhook', configuration: {} }), 201).data;
    s.webhookTrigger = hook.id;
    s.webhookSecret = hook.configuration.secret;
    expectStatus(await call('GET', '/v1/triggers?limit=100'), 200);
    for (const id of [s.messageTrigger, s.apiTrigger, s.webhookTrigger]) expectStatus(await call('GET', `/v1/triggers/${id}`), 200);
    expectStatus(await call('PUT', `/v1/triggers/${s.messageTrigger}`, { body: { configuration: { keywords: ['hi', 'hey'], exact_match: true } } }), 200);
    expectStatus(await call('POST', `/v1/triggers/${s.messageTrigger}/resume`), 200);
    expectStatus(await call('POST', `/v1/triggers/${s.messageTrigger}/pause`), 200);
    expectStatus(await call('POST', `/v1/triggers/${s.messageTrigger}/resume`), 200);
    expectStatus(await call('POST', `/v1/triggers/${s.messageTrigger}/deactivate`), 200);
    expectStatus(await call('POST', `/v1/triggers/${s.messageTrigger}/resume`), 409);
    expectStatus(await call('POST', `/v1/triggers/${s.messageTrigger}/activate`), 200);
  }],
  ['firing triggers', async () => {
    const fired = expectStatus(await call('POST', `/v1/triggers/${s.apiTrigger}/fire`, { body: { message: 'hello', customer_id: '+15550002' } }), 201).data;
    expectStatus(await call('POST', `/v1/triggers/${s.apiTrigger}/fire`, { body: { message: 'again' } }), 429);
    const payload = JSON.stringify({ message: 'hello from a hook' });
    const hookPath = `/hooks/triggers/${s.webhookTrigger}`;
    const signed = { 'Content-Type': 'application/json', [SIGNATURE_HEADER]: signBody(s.webhookSecret!, payload) };
    expectStatus(await call('POST', hookPath, { key: null, body: payload, headers: signed }), 202);
    expectStatus(await call('POST', hookPath, { key: null, body: payload, headers: { ...signed, [SIGNATURE_HEADER]: 'bad' } }), 401);
    expectStatus(await call('POST', hookPath, { key: null, body: 'hello', headers: { 'Content-Type': 'text/plain' } }), 415);
    expectStatus(await call('GET', `/v1/triggers/${s.apiTrigger}/executions?status=running`), 200);
    expectStatus(await call('GET', `/v1/triggers/${s.apiTrigger}/executions/${fired.id}`), 200);
    expectStatus(await call('GET', `/v1/triggers/${s.apiTrigger}/executions/trgexec_missing`), 404);
    expectStatus(await call('GET', `/v1/triggers/${s.apiTrigger}/metrics`), 200);
    expectStatus(await call('DELETE', `/v1/triggers/${s.apiTrigger}`), 200);
  }],
  ['messages redelivered by the provider and customers updated', async () => {
    const msg = { channel: 'whatsapp', customer_id: '+15550003', message: 'hello', provider_message_id: 'wamid.contract-1' };
    const first = expectStatus(await call('POST', '/v1/messages', { body: msg }), 201).data;
    const again = expectStatus(await call('POST', '/v1/messages', { body: msg }), 200).data;
    expect(again.id).toBe(first.id);
    expectStatus(await call('PUT', `/v1/customers/${s.customer}`, { body: { name: 'Ada', tags: ['vip'] } }), 200);
    expectStatus(await call('PUT', `/v1/customers/${s.customer}`, { body: { tags: ['not a tag'] } }), 400);
    expectStatus(await call('PUT', '/v1/customers/cus_missing', { body: { name: 'Nobody' } }), 404);
  }],
  ['analytics', async () => {
    const wf = `/v1/analytics/workflows/${s.workflow}`;
    expectStatus(await call('GET', `${wf}?granularity=hour&start_date=2020-01-01`), 200);
    expectStatus(await call('GET', `${wf}?metrics=total_executions,success_rate`), 200);
    expectStatus(await call('GET', `${wf}?start_date=2026-02-01&end_date=2026-01-01`), 400);
    expectStatus(await call('GET', `${wf}?granularity=year`), 422);
    expectStatus(await call('GET', `${wf}?metrics=bogus`), 400);
    expectStatus(await call('GET', '/v1/analytics/workflows/wf_missing'), 404);
    expectStatus(await call('GET', `${wf}/performance?start_date=2020-01-01`), 200);
    expectStatus(await call('GET', '/v1/analytics/customers/engagement'), 200);
    expectStatus(await call('GET', '/v1/analytics/customers/engagement?start_date=2026-02-01&end_date=2026-01-01'), 400);
    expectStatus(await call('GET', '/v1/analytics/customers/journey'), 200);
    expectStatus(await call('GET', `/v1/analytics/customers/journey?journey_type=workflow&workflow_id=${s.workflow}`), 200);
    expectStatus(await call('GET', '/v1/analytics/realtime?include_system=true'), 200);
    expectStatus(await call('GET', `/v1/analytics/realtime?workflow_id=${s.workflow}`), 200);
    expectStatus(await call('GET', '/v1/analytics/realtime?workflow_id=wf_missing'), 404);
    expect(await callStream('/v1/analytics/realtime/stream')).toEqual({ status: 200, contentType: 'text/event-stream' });
  }],
  ['exports', async () => {
    const created = expectStatus(await call('POST', '/v1/analytics/export', { body: { data_type: 'executions', format: 'csv', include_metadata: true } }), 201).data;
    const ndjson = expectStatus(await call('POST', '/v1/analytics/export', { body: { data_type: 'messages', format: 'json' } }), 201).data;
    expectStatus(await call('POST', '/v1/analytics/export', { body: { data_type: 'executions', start_date: '2026-02-01T00:00:00Z', end_date: '2026-01-01T00:00:00Z' } }), 400);
    expectStatus(await call('POST', '/v1/analytics/export', { body: { data_type: 'executions', filters: { workflow_ids: ['wf_missing'] } } }), 404);
    for (const id of [created.export_id, ndjson.export_id]) {
      await waitForStatus(t, admin, `/v1/analytics/export/${id}`, 'completed');
      expectStatus(await call('GET', `/v1/analytics/export/${id}`), 200);
      expectStatus(await call('GET', `/v1/analytics/export/${id}/download`), 200);
    }
    expectStatus(await call('GET', '/v1/analytics/exports?limit=5'), 200);
    const org = expectStatus(await call('GET', '/v1/me'), 200).data.organization_id;
    await t.query(`insert into exports (id, organization_id, data_type, format, request, status) values ('exp_pending', ?, 'executions', 'csv', '{}', 'processing')`, [org]);
    expectStatus(await call('GET', '/v1/analytics/export/exp_pending'), 200);
    expectStatus(await call('GET', '/v1/analytics/export/exp_pending/download'), 409);
    expectStatus(await call('GET', '/v1/analytics/export/exp_missing/download'), 404);
  }],
  ['reports', async () => {
    const body = { name: 'Weekly', metrics: ['total_executions', 'success_rate'], group_by: ['channel'], granularity: 'week' };
    const csv = expectStatus(await call('POST', '/v1/analytics/reports', { body }), 201).data;
    const json = expectStatus(await call('POST', '/v1/analytics/reports', { body: { ...body, format: 'json' } }), 201).data;
    expectStatus(await call('POST', '/v1/analytics/reports', { body: { ...body, metrics: ['bogus'] } }), 400);
    expectStatus(await call('POST', '/v1/analytics/reports', { body: { ...body, granularity: 'year' } }), 422);
    expectStatus(await call('POST', '/v1/analytics/reports', { body: { ...body, filters: { workflow_ids: ['wf_missing'] } } }), 404);
    for (const id of [csv.report_id, json.report_id]) {
      await waitForStatus(t, admin, `/v1/analytics/reports/${id}`, 'completed');
      expectStatus(await call('GET', `/v1/analytics/reports/${id}`), 200);
      expectStatus(await call('GET', `/v1/analytics/reports/${id}/download`), 200);
    }
    expectStatus(await call('GET', '/v1/analytics/reports?limit=5'), 200);
    expectStatus(await call('GET', '/v1/analytics/reports/rpt_missing'), 404);
    expectStatus(await call('GET', '/v1/analytics/reports/rpt_missing/download'), 404);
  }],
  ['applications (JWT issuers)', async () => {
    const { publicKey } = await generateKeyPair('ES256');
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] };
    const body = { name: 'Backend', scopes: ['workflows:read'], jwks };
    const app = expectStatus(await call('POST', '/v1/applications', { body }), 201).data.id;
    expectStatus(await call('POST', '/v1/applications', { body }), 409);
    expectStatus(await call('POST', '/v1/applications', { body: { name: 'No keys', scopes: ['workflows:read'] } }), 400);
    expectStatus(await call('GET', '/v1/applications'), 200);
    expectStatus(await call('GET', `/v1/applications/${app}`), 200);
    expectStatus(await call('PUT', `/v1/applications/${app}`, { body: { scopes: ['workflows:read', 'triggers:read'] } }), 200);
    expectStatus(await call('DELETE', `/v1/applications/${app}`), 200);
    expectStatus(await call('GET', `/v1/applications/${app}`), 404);
  }],
  ['users and OAuth clients', async () => {
    const body = { email: 'contract@example.com', password: 'correct horse battery staple', role: 'read' };
    const user = expectStatus(await call('POST', '/v1/users', { body }), 201).data.id;
    expectStatus(await call('POST', '/v1/users', { body }), 409);
    expectStatus(await call('POST', '/v1/users', { body: { ...body, password: 'short' } }), 400);
    expectStatus(await call('GET', '/v1/users'), 200);
    expectStatus(await call('GET', `/v1/users/${user}`), 200);
    expectStatus(await call('PUT', `/v1/users/${user}`, { body: { role: 'read_write' } }), 200);
    expectStatus(await call('DELETE', `/v1/users/${user}`), 200);
    expectStatus(await call('GET', `/v1/users/${user}`), 404);

    const client = { name: 'Partner', type: 'confidential', redirect_uris: [REDIRECT], scopes: ['workflows:read'] };
    s.oauthClient = expectStatus(await call('POST', '/v1/oauth-clients', { body: client }), 201).data.client_id;
    expectStatus(await call('POST', '/v1/oauth-clients', { body: { ...client, redirect_uris: ['http://example.com/cb'] } }), 400);
    const pub = expectStatus(await call('POST', '/v1/oauth-clients', { body: { ...client, type: 'public' } }), 201).data.client_id;
    expectStatus(await call('GET', '/v1/oauth-clients'), 200);
    expectStatus(await call('GET', `/v1/oauth-clients/${s.oauthClient}`), 200);
    s.oauthSecret = expectStatus(await call('POST', `/v1/oauth-clients/${s.oauthClient}/rotate-secret`), 200).data.client_secret;
    expectStatus(await call('POST', `/v1/oauth-clients/${pub}/rotate-secret`), 409);
    expectStatus(await call('DELETE', `/v1/oauth-clients/${pub}`), 200);
  }],
  ['the OAuth authorization server', async () => {
    expectStatus(await call('GET', '/.well-known/oauth-authorization-server', { key: null }), 200);
    const verifier = randomBytes(32).toString('base64url');
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: s.oauthClient!,
      redirect_uri: REDIRECT,
      scope: 'workflows:read',
      state: 'contract',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    expectStatus(await call('GET', `/oauth/authorize?${query}`, { key: null }), 303);
    expectStatus(await call('GET', `/oauth/authorize?${new URLSearchParams({ ...Object.fromEntries(query), redirect_uri: `${REDIRECT}/evil` })}`, { key: null }), 400);
    // A public client without PKCE: the error goes back to the client, here as an auto-submitting HTML form (response_mode=form_post), status 400.
    const pub = expectStatus(await call('POST', '/v1/oauth-clients', { body: { name: 'SPA', type: 'public', redirect_uris: [REDIRECT], scopes: ['workflows:read'] } }), 201).data.client_id;
    const formPost = new URLSearchParams({ response_type: 'code', client_id: pub, redirect_uri: REDIRECT, scope: 'workflows:read', state: 's', response_mode: 'form_post' });
    expectStatus(await call('GET', `/oauth/authorize?${formPost}`, { key: null }), 400);

    const user = await createUser(t, admin, 'read');
    const callback = await signInAndConsent(t.config.BASE_URL, `${t.config.BASE_URL}/oauth/authorize?${query}`, user);
    const code = callback.searchParams.get('code');
    if (!code) throw new Error(`no code: ${callback.href}`);
    const client = { client_id: s.oauthClient!, client_secret: s.oauthSecret! };
    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, ...client };
    const tokens = expectStatus(await call('POST', '/oauth/token', { key: null, form: exchange }), 200);
    const refreshed = expectStatus(await call('POST', '/oauth/token', { key: null, form: { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...client } }), 200);
    expectStatus(await call('POST', '/oauth/introspect', { key: null, form: { token: refreshed.access_token, ...client } }), 200);
    expectStatus(await call('POST', '/oauth/introspect', { key: null, form: { token: refreshed.access_token, ...client, client_secret: 'wrong' } }), 401);
    expectStatus(await call('POST', '/oauth/revoke', { key: null, form: { token: refreshed.access_token, ...client } }), 200);
    expectStatus(await call('POST', '/oauth/revoke', { key: null, form: { token: refreshed.access_token, ...client, client_secret: 'wrong' } }), 401);
    // A request without a body, or without the token, is 400 invalid_request with the OAuth error body.
    for (const path of ['/oauth/revoke', '/oauth/introspect']) {
      expect(expectStatus(await call('POST', path, { key: null }), 400)).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      expect(expectStatus(await call('POST', path, { key: null, form: client }), 400)).toEqual({ error: 'invalid_request', error_description: "missing required parameter 'token'" });
    }
    expect(expectStatus(await call('POST', '/oauth/introspect', { key: null, form: { token: refreshed.access_token, ...client } }), 200)).toEqual({ active: false });
    // Last: a reused code is refused and revokes what it gave.
    expectStatus(await call('POST', '/oauth/token', { key: null, form: exchange }), 400);
    expectStatus(await call('POST', '/oauth/token', { key: null, form: { ...exchange, client_secret: 'wrong' } }), 401);

    // The user's grants: a fresh consent is listed and revoked (a second time: 404), then all of them.
    await signInAndConsent(t.config.BASE_URL, `${t.config.BASE_URL}/oauth/authorize?${query}`, user);
    expect(expectStatus(await call('GET', `/v1/users/${user.id}/grants`), 200).data).toHaveLength(1);
    expectStatus(await call('DELETE', `/v1/users/${user.id}/grants/${s.oauthClient}`), 200);
    expectStatus(await call('DELETE', `/v1/users/${user.id}/grants/${s.oauthClient}`), 404);
    expectStatus(await call('DELETE', `/v1/users/${user.id}/grants`), 200);
    expectStatus(await call('GET', '/v1/users/usr_missing/grants'), 404);
  }],
];

beforeAll(async () => {
  t = await createTestApp();
  worker = await startTestWorker({ taskQueue: t.config.TEMPORAL_TASK_QUEUE, activities: createActivities({ services: t.services }) });
  contract = new OpenApiContract((await t.request.get('/v1/openapi.json')).body);
  admin = (await t.createKey('admin')).key;
  reader = (await t.createKey('read')).key;
});
afterAll(async () => {
  await worker.stop();
  await t.close();
});

const fill = (template: string) => template.replace(/\{[^}]+\}/g, (p) => `${p.slice(1, 4)}_missing`);

test.each(CALLS)('%s: every response is documented', async (_name, run) => {
  problems.length = 0;
  await run();
  expect(problems).toEqual([]);
});

/** Bodies each operation with an id in its path would accept; `fill` makes the ids unknown. */
const VALID_BODIES: Record<string, object> = {
  'PUT /v1/workflows/{workflow_id}': { name: 'Renamed' },
  'POST /v1/workflows/{workflow_id}/dry-runs': { execution_ids: ['exec_missing'] },
  'PUT /v1/webhooks/{webhook_id}': { name: 'Renamed' },
  'POST /v1/webhooks/{webhook_id}/test': { event_type: 'workflow.completed' },
  'POST /v1/webhooks/{webhook_id}/rotate-secret': {},
  'POST /v1/webhooks/{webhook_id}/recover': { since: '2026-01-01T00:00:00Z' },
  'PUT /v1/triggers/{trigger_id}': { name: 'Renamed' },
  'POST /v1/triggers/{trigger_id}/fire': { order: 1 },
  'PUT /v1/customers/{customer_id}': { name: 'Renamed' },
  'POST /v1/customers/{customer_id}/messages': { text: 'Hello from a person' },
  'POST /v1/customers/{customer_id}/handoff': { reason: 'Renamed' },
  'PUT /v1/knowledge-bases/{knowledge_base_id}': { name: 'Renamed' },
  'POST /v1/knowledge-bases/{knowledge_base_id}/articles': { title: 'Renamed', content: 'Renamed' },
  'PUT /v1/knowledge-bases/{knowledge_base_id}/articles/{article_id}': { title: 'Renamed' },
  'PUT /v1/applications/{application_id}': { name: 'Renamed' },
  'PUT /v1/users/{user_id}': { role: 'read' },
  'PUT /v1/channels/{channel_id}': { name: 'Renamed' },
};

test('every authenticated operation answers 401 without credentials, 403 to a read key when it writes, and 404 for unknown ids, as documented', async () => {
  problems.length = 0;
  for (const op of contract.list().filter((o) => o.secured)) {
    const path = fill(op.template);
    const body = op.hasBody ? {} : undefined;
    expectStatus(await call(op.method, path, { key: null, body }), 401);
    if (op.method !== 'GET') expectStatus(await call(op.method, path, { key: reader, body }), 403);
    if (op.template.includes('{')) {
      // A valid body, so that a validation 400 cannot stand in for the unknown id's 404.
      const what = `${op.method} ${op.template}`;
      const valid = op.hasBody ? VALID_BODIES[what] : undefined;
      if (op.hasBody && !valid) throw new Error(`no valid body for ${what}: add one to VALID_BODIES`);
      const res = await call(op.method, path, { body: valid });
      expect({ what, status: res.status }).toEqual({ what, status: 404 });
    }
  }
  expect(problems).toEqual([]);
});

test('the checker itself refuses an undocumented status, header or body', () => {
  const ok = { 'x-request-id': 'r', 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1', 'content-type': 'application/json' };
  const me = { credential_type: 'api_key', credential_id: 'key_1', name: 'n', organization_id: 'org_1', permission: 'admin', scopes: [] };
  expect(contract.check('GET', '/v1/me', { status: 200, headers: ok, text: JSON.stringify({ data: me }) })).toEqual([]);
  expect(contract.check('GET', '/v1/me', { status: 418, headers: ok, text: '{}' })[0]).toMatch(/status not documented/);
  expect(contract.check('GET', '/v1/me', { status: 200, headers: { ...ok, 'x-secret': '1' }, text: JSON.stringify({ data: me }) })[0]).toMatch(/x-secret served but not documented/);
  expect(contract.check('GET', '/v1/me', { status: 200, headers: { 'x-request-id': 'r', 'content-type': 'application/json' }, text: JSON.stringify({ data: me }) })[0]).toMatch(/required header x-ratelimit-limit missing/);
  expect(contract.check('GET', '/v1/me', { status: 200, headers: ok, text: JSON.stringify({ data: { ...me, permission: 'owner' } }) })[0]).toMatch(/body does not match/);
});

test('every documented operation was exercised, and answered a success at least once (add the missing ones to CALLS)', () => {
  expect(contract.unexercised()).toEqual([]);
  expect(contract.withoutSuccess()).toEqual([]);
});
