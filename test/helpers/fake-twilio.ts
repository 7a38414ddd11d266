/**
 * Twilio's side of a phone call, for the tests: requests form-encoded and signed exactly as
 * Twilio signs them (the twilio package's own `getExpectedTwilioSignature`), TwiML answers
 * parsed into their verbs in order, and a caller that follows `<Redirect>` as Twilio does.
 * The REST API that `POST /v1/channels/{id}/test` reads and Twilio Messaging sends through is a
 * fake HTTP server; the documented parameters of incoming messages and status callbacks are
 * built here.
 */
import { randomBytes } from 'node:crypto';
import { SaxesParser } from 'saxes';
import { getExpectedTwilioSignature } from 'twilio/lib/webhooks/webhooks';
import type { TestApp } from './app';
import { type FakeHttpServer, startFakeHttpServer } from './fake-http-server';
import { type SpecConformance, specConformance } from './spec-conformance';

export interface TwimlVerb {
  name: string;
  attrs: Record<string, string>;
  /** The verb's own text (`<Say>` words, `<Redirect>` URL). */
  text: string;
  children: TwimlVerb[];
}

/** The verbs of a TwiML `<Response>`, in order; throws on anything that is not one. */
export function parseTwiml(xml: string): TwimlVerb[] {
  const parser = new SaxesParser();
  const root: TwimlVerb = { name: '#root', attrs: {}, text: '', children: [] };
  const stack: TwimlVerb[] = [root];
  parser.on('opentag', (tag) => {
    const verb: TwimlVerb = { name: tag.name, attrs: { ...(tag.attributes as Record<string, string>) }, text: '', children: [] };
    stack[stack.length - 1]!.children.push(verb);
    stack.push(verb);
  });
  parser.on('text', (text) => {
    stack[stack.length - 1]!.text += text;
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  parser.write(xml).close();
  const [response] = root.children;
  if (response?.name !== 'Response') throw new Error(`not TwiML: ${xml}`);
  return response.children;
}

export const twilioSignature = (authToken: string, url: string, params: Record<string, string>) => getExpectedTwilioSignature(authToken, url, params);

export const newCallSid = () => `CA${randomBytes(16).toString('hex')}`;
export const newAccountSid = () => `AC${randomBytes(16).toString('hex')}`;

/** A Pause then a Redirect: the execution was not at a wait in time; Twilio follows the redirect. */
const isPauseRedirect = (verbs: TwimlVerb[]) => verbs.length === 2 && verbs[0]!.name === 'Pause' && verbs[1]!.name === 'Redirect';

/** One phone call on a hook: each method is a request Twilio would send, answered as TwiML verbs. */
export class FakeCall {
  readonly callSid = newCallSid();
  /** Every answer, in order (after redirects were followed). */
  readonly answers: TwimlVerb[][] = [];
  /** How many `<Pause/><Redirect>` answers were followed. */
  redirects = 0;

  constructor(
    private readonly t: TestApp,
    readonly hookUrl: string,
    private readonly authToken: string,
    readonly from: string,
    readonly to: string,
  ) {}

  /** The raw request: status and body, signed with `signWith` (default: the right Auth Token). */
  async post(extra: Record<string, string>, signWith = this.authToken) {
    const params = { AccountSid: 'AC00000000000000000000000000000000', CallSid: this.callSid, From: this.from, To: this.to, Direction: 'inbound', CallStatus: 'in-progress', ...extra };
    const res = await this.t.request
      .post(new URL(this.hookUrl).pathname)
      .type('form')
      .set('X-Twilio-Signature', twilioSignature(signWith, this.hookUrl, params))
      .send(params);
    return res;
  }

  /** A request whose TwiML answer is awaited, following `<Pause/><Redirect>` answers as Twilio does. */
  async turn(extra: Record<string, string>): Promise<TwimlVerb[]> {
    let res = await this.post(extra);
    for (let i = 0; ; i++) {
      if (res.status !== 200 || !/xml/.test(String(res.headers['content-type']))) throw new Error(`hook answered ${res.status}: ${res.text}`);
      const verbs = parseTwiml(res.text);
      if (!isPauseRedirect(verbs) || i >= 60) {
        this.answers.push(verbs);
        return verbs;
      }
      this.redirects++;
      res = await this.post({});
    }
  }

  /** The call comes in. */
  dial = () => this.turn({ CallStatus: 'ringing' });
  /** The caller speaks in answer to a `<Gather>`. */
  speak = (speech: string) => this.turn({ SpeechResult: speech, Confidence: '0.91' });
  /** The caller presses keys in answer to a `<Gather>`. */
  press = (digits: string) => this.turn({ Digits: digits });
  /** Twilio's status callback: the call is over, after `seconds` (its CallDuration). */
  hangUp = (status = 'completed', seconds = '17') => this.post({ CallStatus: status, CallDuration: seconds });
}

/** What the caller hears in an answer: the `<Say>` texts, inside `<Gather>` too. */
export const spoken = (verbs: TwimlVerb[]): string[] =>
  verbs.flatMap((v) => (v.name === 'Say' ? [v.text] : v.name === 'Gather' ? spoken(v.children) : []));

/** A Message the service created (`POST Accounts/{sid}/Messages.json`): its form parameters as sent. */
export interface TwilioMessageSend {
  sid: string;
  accountSid: string;
  params: Record<string, string>;
  authorization: string | undefined;
}

export const newMessageSid = () => `SM${randomBytes(16).toString('hex')}`;

/**
 * Twilio's REST API: the account read of the connection test (GET /2010-04-01/Accounts/{sid}.json)
 * and the Messages resource (POST .../Messages.json, answered 201 with the Message, `status: queued`,
 * as https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource shows).
 */
export async function startFakeTwilioApi(): Promise<FakeHttpServer & { conformance: SpecConformance; messages: TwilioMessageSend[] }> {
  // -- Twilio's published OpenAPI checks every request; a violation fails the test (spec-conformance.ts, issue #46).
  const conformance = specConformance('twilio');
  const server = await startFakeHttpServer({ onArrive: conformance.check });
  const messages: TwilioMessageSend[] = [];
  server.setDefault((r) => {
    const send = /\/Accounts\/(AC[0-9a-f]{32})\/Messages\.json$/.exec(r.path);
    if (send && r.method === 'POST') {
      const params = Object.fromEntries(new URLSearchParams(r.raw));
      const sent = { sid: newMessageSid(), accountSid: send[1]!, params, authorization: r.headers.authorization };
      messages.push(sent);
      const body = {
        sid: sent.sid,
        account_sid: sent.accountSid,
        api_version: '2010-04-01',
        body: params.Body ?? null,
        direction: 'outbound-api',
        from: params.From ?? null,
        to: params.To,
        messaging_service_sid: params.MessagingServiceSid ?? null,
        num_media: '0',
        num_segments: '1',
        status: 'queued',
        error_code: null,
        error_message: null,
        uri: `/2010-04-01/Accounts/${sent.accountSid}/Messages/${sent.sid}.json`,
      };
      return { status: 201, body };
    }
    const sid = /\/Accounts\/(AC[0-9a-f]{32})\.json$/.exec(r.path)?.[1];
    return sid ? { status: 200, body: { sid, status: 'active', friendly_name: 'Test account' } } : { status: 404, body: { code: 20404, message: 'The requested resource was not found' } };
  });
  return {
    ...server,
    conformance,
    messages,
    close: async () => {
      await server.close();
      conformance.assertConforms();
    },
  };
}

/**
 * Twilio's parameters of an incoming message ("A message comes in"), as documented at
 * https://www.twilio.com/docs/messaging/guides/webhook-request (SMS: the location fields of
 * the example; WhatsApp: `ProfileName`, `WaId`, `whatsapp:` addresses, as in
 * https://www.twilio.com/docs/whatsapp/api#receiving-messages and its webhook parameters).
 */
export function twilioIncomingMessage(p: { accountSid: string; from: string; to: string; body: string; messagingServiceSid?: string; whatsapp?: { profileName: string } }): Record<string, string> {
  const sid = newMessageSid();
  const common = {
    ToCountry: 'US',
    ToState: 'CA',
    SmsMessageSid: sid,
    NumMedia: '0',
    ToCity: 'SAN FRANCISCO',
    FromZip: '94105',
    SmsSid: sid,
    FromState: 'CA',
    SmsStatus: 'received',
    FromCity: 'SAN FRANCISCO',
    Body: p.body,
    FromCountry: 'US',
    To: p.to,
    ToZip: '94105',
    NumSegments: '1',
    MessageSid: sid,
    AccountSid: p.accountSid,
    From: p.from,
    ApiVersion: '2010-04-01',
    ...(p.messagingServiceSid ? { MessagingServiceSid: p.messagingServiceSid } : {}),
  };
  if (!p.whatsapp) return common;
  const { ToCountry: _c, ToState: _s, ToCity: _ci, FromZip: _z, FromState: _fs, FromCity: _fc, FromCountry: _fco, ToZip: _tz, ...whatsapp } = common;
  return { ...whatsapp, ProfileName: p.whatsapp.profileName, WaId: p.from.replace('whatsapp:+', ''), MessageType: 'text', ReferralNumMedia: '0' };
}

/**
 * Twilio's status callback of an outbound message, as documented at
 * https://www.twilio.com/docs/messaging/guides/outbound-message-status-in-status-callbacks
 * (`ErrorCode` with `failed` and `undelivered`).
 */
export function twilioStatusCallback(p: { accountSid: string; messageSid: string; status: string; from: string; to: string; errorCode?: string }): Record<string, string> {
  return {
    AccountSid: p.accountSid,
    ApiVersion: '2010-04-01',
    From: p.from,
    MessageSid: p.messageSid,
    MessageStatus: p.status,
    SmsSid: p.messageSid,
    SmsStatus: p.status,
    To: p.to,
    ...(p.errorCode ? { ErrorCode: p.errorCode } : {}),
  };
}

/** POSTs Twilio's form `params` to a hook URL, signed as Twilio signs it (with `authToken`). */
export const postTwilioForm = (t: TestApp, hookUrl: string, params: Record<string, string>, authToken: string) =>
  t.request.post(new URL(hookUrl).pathname).type('form').set('X-Twilio-Signature', twilioSignature(authToken, hookUrl, params)).send(params);
