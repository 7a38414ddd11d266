/**
 * Owns the hook of a `twilio_voice` connection's number ("A call comes in" and the call status
 * callback) at the one channel hook route, `{BASE_URL}/hooks/channels/{channel_id}` (its
 * `webhook_url`), and at `{BASE_URL}/hooks/voice/{channel_id}`, kept as an alias for numbers
 * configured before. Outside /v1 and its API-key pipeline: Twilio proves itself instead, and
 * what to say next is the answer, as TwiML (the synchronous answer is this provider's send).
 * A form-encoded POST to /hooks/channels/{id} of another type of connection is passed on to
 * the JSON hook (channel-hooks.routes.ts).
 *
 * - Bodies are form-encoded (Twilio's), so this middleware runs before the JSON-only body
 *   layer. Every POST must carry a valid `X-Twilio-Signature` (the twilio package's
 *   `validateRequest`: HMAC-SHA1 of the hook URL and the sorted parameters, keyed with the
 *   Auth Token); otherwise 403 and nothing is recorded.
 * - A call's first request (`CallSid` not seen) records the caller, the call and, when a
 *   `call`-triggered voice workflow matches, its execution; the run starts with the call's
 *   first turn (update-with-start). With no workflow: a polite `<Say>` and `<Hangup/>`.
 * - A `<Gather>` result (`SpeechResult` / `Digits`) is the caller's reply: recorded as an
 *   inbound `voice` message through the intake and path of POST /v1/messages (the
 *   organization's fair share, then `receiveMessage`: it claims the form's wait), then the
 *   turn's update carries it and answers the next TwiML.
 * - A request without input (a redirect, or a silent caller) takes the turn from the same
 *   cursor: it collects what the run produced since, or asks the last question again.
 * - A status callback whose `CallStatus` says the call is over signals the run (a waiting
 *   form ends with `caller_hung_up`) and answers an empty `<Response/>`.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Context, Next } from 'koa';
import { validateRequest } from 'twilio/lib/webhooks/webhooks';
import { AppError } from '../../../../http/errors';
import { ErrorOut, type OpenAPIRegistry, responseHeaders } from '../../../../http/openapi';
import { z } from '../../../../http/zod';
import type { Services } from '../../../../services';
import type { CustomerReply } from '../../../../../temporal/executions.shared';
import type { VoiceItem } from '../../../../../temporal/voice.shared';
import type { ChannelConnection } from '../../channel.entity';
import { channelNotFound, connectionForHook, openSecretOf } from '../../channel-lookup';
import { HOOK_ID_PATTERN, passConnection, readHookForm } from '../../hook-forms.routes';
import type { InboundServices } from '../../../inbound/inbound-state';
import { markReplyDelivered } from '../../../conversations/conversation.writes';
import { receiveMessage } from '../../../inbound/message.service';
import { callWorkflowOf, findCall, keepPendingReply, outboundSince, recordAnswer, recordCallEnd, recordCallStart, untilWaitOpen, type VoiceCallRow } from './voice-calls';
import { voiceAliasUrl, voiceHookUrl } from './voice-hook-url';
import { emptyTwiml, goodbyeTwiml, pauseTwiml, turnTwiml } from './voice-twiml';
import { signalCallEnded, takeTurn, type TurnOutcome } from './voice-turns';

export const TWILIO_SIGNATURE_HEADER = 'x-twilio-signature';
const PATH = /^\/hooks\/(voice|channels)\/([^/]*)$/;
/** Call statuses of the status callback that mean the caller is gone. */
const ENDED_STATUSES = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);
const NO_WORKFLOW = 'Sorry, we cannot take your call right now. Goodbye.';

/** What Twilio sends that the hook reads; the rest is signed but unused. */
const CallRequest = z.object({
  CallSid: z.string().regex(/^CA[0-9a-fA-F]{32}$/, 'CallSid must be a Twilio Call SID'),
  From: z.string().min(1).max(64),
  To: z.string().min(1).max(64),
  CallStatus: z.string().max(32).optional(),
  // Seconds, on the status callback of a call that ended (Twilio sends it with `completed`).
  CallDuration: z
    .string()
    .regex(/^\d{1,9}$/, 'CallDuration must be a whole number of seconds')
    .transform(Number)
    .optional(),
  SpeechResult: z.string().max(4096).optional(),
  Digits: z.string().max(64).optional(),
  Confidence: z.string().max(32).optional(),
});
type CallRequest = z.output<typeof CallRequest>;

/**
 * The middleware: answers Twilio's form-encoded POSTs to /hooks/channels/{id} of a
 * `twilio_voice` connection and everything at /hooks/voice/{id}; passes everything else on.
 */
export function voiceHooks(services: InboundServices) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const match = PATH.exec(ctx.path);
    if (!match) return await next();
    const alias = match[1] === 'voice';
    const isForm = ctx.method === 'POST' && Boolean(ctx.is('application/x-www-form-urlencoded'));
    // Meta's handshake and JSON bodies at the channel route are the JSON hook's.
    if (!alias && !isForm) return await next();
    if (ctx.method !== 'POST') throw new AppError(405, 'METHOD_NOT_ALLOWED', 'The voice hook accepts POST requests only', { headers: { Allow: 'POST' } });
    const id = decodeURIComponent(match[2]!);
    if (!HOOK_ID_PATTERN.test(id)) throw channelNotFound();
    const connection = await connectionForHook(services.hotPool, id);
    if (connection.type !== 'twilio_voice') {
      if (alias) throw channelNotFound();
      passConnection(ctx, connection);
      return await next();
    }
    if (!isForm) throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Twilio posts application/x-www-form-urlencoded bodies');
    const { fields: params } = await readHookForm(ctx);
    // Twilio signs the URL it called; <Gather action> and <Redirect> point back to the same one.
    const hookUrl = alias ? voiceAliasUrl(services.config, connection.id) : voiceHookUrl(services.config, connection.id);
    const signedUrl = hookUrl + (ctx.querystring ? `?${ctx.querystring}` : '');
    const signature = ctx.get(TWILIO_SIGNATURE_HEADER);
    const authToken = openSecretOf(services.config, connection, 'auth_token') ?? '';
    if (!signature || !authToken || !validateRequest(authToken, signature, signedUrl, params)) {
      throw new AppError(403, 'INVALID_SIGNATURE', 'X-Twilio-Signature does not match the request signed with the Auth Token');
    }
    const parsed = CallRequest.safeParse(params);
    if (!parsed.success) throw new AppError(400, 'INVALID_REQUEST', parsed.error.issues[0]?.message ?? 'Not a Twilio voice request', { field: String(parsed.error.issues[0]?.path[0] ?? '') });
    // Calls to another number are not this connection's (a misconfigured number): refused as unproven.
    if (parsed.data.To !== connection.config.phone_number && parsed.data.From !== connection.config.phone_number) {
      throw new AppError(403, 'WRONG_NUMBER', `This hook answers calls to ${connection.config.phone_number} only`);
    }
    ctx.status = 200;
    ctx.type = 'text/xml';
    ctx.body = await answer(services, connection, parsed.data, hookUrl);
  };
}

async function answer(services: InboundServices, c: ChannelConnection, req: CallRequest, hookUrl: string): Promise<string> {
  const em = services.orm.em.fork() as EntityManager;
  const call = await findCall(em, c.id, req.CallSid);
  const hasInput = req.SpeechResult !== undefined || req.Digits !== undefined;
  if (req.CallStatus !== undefined && ENDED_STATUSES.has(req.CallStatus) && !hasInput) {
    if (call && (await recordCallEnd(em, call.call_sid, req.CallStatus, req.CallDuration)) && call.execution_id) await signalCallEnded(services, call.execution_id, req.CallStatus);
    return emptyTwiml();
  }
  if (!call) return await firstRequest(services, em, c, req, hookUrl);
  if (!call.execution_id || c.status === 'disabled') return goodbyeTwiml(NO_WORKFLOW);
  let reply = call.pending_reply ?? undefined;
  if (hasInput) {
    if (call.last_prompt) await untilWaitOpen(em, call.execution_id);
    reply = await recordReply(services, em, c, call, req);
  }
  const outcome = await takeTurn(services, call.execution_id, { from: call.answered, ...(reply ? { reply } : {}) });
  // The turn's Update carried the reply (the run drops a reply it has, by message id): stamped
  // beside the cursor's move, not before it.
  const [twiml] = await Promise.all([
    render(services, em, call, outcome, hookUrl),
    reply && outcome.kind === 'answer' ? markReplyDelivered(em, reply.messageId) : undefined,
  ]);
  return twiml;
}

async function firstRequest(services: InboundServices, em: EntityManager, c: ChannelConnection, req: CallRequest, hookUrl: string): Promise<string> {
  const workflowId = c.status === 'active' ? await callWorkflowOf(em, c) : undefined;
  let started;
  try {
    started = await em.transactional((tx) => recordCallStart(tx as EntityManager, c, { callSid: req.CallSid, from: req.From, to: req.To }, workflowId));
  } catch (err) {
    // The same first request twice (Twilio retried it): the first one recorded the call.
    if ((err as { code?: string }).code !== '23505') throw err;
    const call = await findCall(em, c.id, req.CallSid);
    if (!call?.execution_id) return goodbyeTwiml(NO_WORKFLOW);
    return await render(services, em, call, await takeTurn(services, call.execution_id, { from: call.answered }), hookUrl);
  }
  if (!started.pending) return goodbyeTwiml(NO_WORKFLOW);
  const outcome = await takeTurn(services, started.pending.executionId, { from: 0 }, started.pending);
  const call: VoiceCallRow = {
    call_sid: req.CallSid,
    organization_id: c.organizationId,
    connection_id: c.id,
    execution_id: started.pending.executionId,
    customer_id: started.customerId,
    answered: 0,
    pending_reply: null,
    last_prompt: null,
    ended_at: null,
  };
  return await render(services, em, call, outcome, hookUrl);
}

/** Records the caller's reply as an inbound voice message (it claims the waiting form's wait) and keeps it until answered. */
async function recordReply(services: InboundServices, em: EntityManager, c: ChannelConnection, call: VoiceCallRow, req: CallRequest): Promise<CustomerReply> {
  const speech = req.SpeechResult !== undefined && req.SpeechResult.trim() !== '';
  const text = (speech ? req.SpeechResult! : (req.Digits ?? '')).trim();
  // The intake of POST /v1/messages: a reply waits its turn behind the organization's own flood
  // of messages (the caller hears the answer once it is recorded and the turn is taken).
  const received = await services.intake.run(c.organizationId, () => receiveMessage(services, c.organizationId, {
    channel: 'voice',
    customer_id: req.From,
    message: text,
    metadata: { type: speech ? 'speech' : 'dtmf', call_sid: call.call_sid, channel_connection_id: c.id, ...(speech && req.Confidence ? { confidence: req.Confidence } : {}) },
    // One reply per answered turn: Twilio retrying the same Gather result records it once.
    provider_message_id: `${call.call_sid}:${call.answered}`,
  }, undefined, { replyDelivery: 'caller' }));
  const reply = { messageId: received.result.message_id, text };
  await keepPendingReply(em, call.call_sid, reply);
  return reply;
}

async function render(services: Services, em: EntityManager, call: VoiceCallRow, outcome: TurnOutcome, hookUrl: string): Promise<string> {
  if (outcome.kind === 'late') return pauseTwiml(hookUrl);
  if (outcome.kind === 'closed') {
    const [row] = await em.getConnection().execute<Array<{ status: string }>>('select status from executions where id = ?', [call.execution_id]);
    // Not started on Temporal yet (the reconciler will): come back shortly.
    if (!row || row.status === 'running') return pauseTwiml(hookUrl);
    const texts = await outboundSince(em, call.execution_id!, call.answered);
    await recordAnswer(em, call.call_sid, call.answered + texts.length, null);
    return turnTwiml(texts.map((text) => ({ kind: 'say', text })), { ended: true, hookUrl });
  }
  const { items, next, ended } = outcome.result;
  const lastAsk = [...items].reverse().find((i): i is Extract<VoiceItem, { kind: 'ask' }> => i.kind === 'ask');
  await recordAnswer(em, call.call_sid, next, lastAsk ?? null);
  // Nothing new while the run still waits: the caller said nothing, ask again.
  const said = items.length === 0 && !ended && call.last_prompt ? [call.last_prompt] : items;
  return turnTwiml(said, { ended, hookUrl });
}

/** The hook in the OpenAPI document: outside /v1, authenticated by Twilio's signature. */
export function registerVoiceHookDocs(registry: OpenAPIRegistry): void {
  const error = (description: string) => ({ description, headers: responseHeaders([]), content: { 'application/json': { schema: ErrorOut } } });
  registry.registerPath({
    method: 'post',
    path: '/hooks/voice/{channel_id}',
    operationId: 'receiveVoiceHook',
    summary: "Twilio's voice webhook of a twilio_voice connection: answers each call request with TwiML",
    description:
      'Served at the connection’s `webhook_url`, `/hooks/channels/{channel_id}` (a form-encoded POST there is this request), and at this path, kept for numbers configured before. ' +
      'Set as the number’s "A call comes in" webhook (HTTP POST) and as its call status callback. Signed by Twilio: ' +
      '`X-Twilio-Signature` is the base64 HMAC-SHA1 of the full hook URL followed by the POST parameters sorted by name, keyed with the Auth Token. ' +
      'A new `CallSid` starts the organization’s active voice workflow triggered by `{"type": "call"}`; a `SpeechResult` or `Digits` is the caller’s reply to the last `<Gather>`; ' +
      'the answer holds everything the execution says up to its next wait (`<Say>`, `<Gather>`) or its end (`<Hangup/>`), or `<Pause length="1"/><Redirect>` when it did not get there within VOICE_ANSWER_BUDGET_MS. ' +
      'A `CallStatus` of completed, busy, no-answer, failed or canceled ends a waiting form with `caller_hung_up`.',
    tags: ['Channels'],
    security: [],
    request: {
      params: z.object({ channel_id: z.string() }),
      headers: z.object({ 'X-Twilio-Signature': z.string().openapi({ example: 'RSOYDt4T1cUTdK1PDd93/VVr8B8=' }) }),
      body: {
        content: {
          'application/x-www-form-urlencoded': {
            schema: z.object({
              CallSid: z.string().openapi({ example: 'CA1234567890abcdef1234567890abcdef' }),
              From: z.string().openapi({ example: '+14155550123' }),
              To: z.string().openapi({ example: '+14155550100' }),
              CallStatus: z.string().optional(),
              CallDuration: z.string().optional().openapi({ description: 'Seconds, on the status callback of an ended call; the call’s session duration in engagement analytics', example: '42' }),
              SpeechResult: z.string().optional(),
              Digits: z.string().optional(),
              Confidence: z.string().optional(),
            }),
          },
        },
        required: true,
      },
    },
    responses: {
      200: { description: 'TwiML', headers: responseHeaders([]), content: { 'text/xml': { schema: z.string().openapi({ example: '<?xml version="1.0" encoding="UTF-8"?><Response><Say>Hello!</Say><Hangup/></Response>' }) } } },
      400: error('INVALID_REQUEST: not a Twilio voice request (no CallSid, From or To, or a CallDuration that is not whole seconds), or NUL characters'),
      403: error('INVALID_SIGNATURE, or WRONG_NUMBER: a call to another number than the connection’s'),
      404: error('CHANNEL_NOT_FOUND: no such twilio_voice connection'),
      405: error('METHOD_NOT_ALLOWED'),
      413: error('PAYLOAD_TOO_LARGE'),
      415: error('UNSUPPORTED_MEDIA_TYPE'),
      503: error('SERVICE_UNAVAILABLE: the database is unavailable'),
    },
  });
}
