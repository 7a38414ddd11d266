/**
 * Twilio's side of a phone call, for the tests: requests form-encoded and signed exactly as
 * Twilio signs them (the twilio package's own `getExpectedTwilioSignature`), TwiML answers
 * parsed into their verbs in order, and a caller that follows `<Redirect>` as Twilio does.
 * The REST API that `POST /v1/channels/{id}/test` reads is a fake HTTP server.
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

/** Twilio's REST API for the connection test: GET /2010-04-01/Accounts/{sid}.json. */
export async function startFakeTwilioApi(): Promise<FakeHttpServer & { conformance: SpecConformance }> {
  // -- Twilio's published OpenAPI checks every request; a violation fails the test (spec-conformance.ts, issue #46).
  const conformance = specConformance('twilio');
  const server = await startFakeHttpServer({ onArrive: conformance.check });
  server.setDefault((r) => {
    const sid = /\/Accounts\/(AC[0-9a-f]{32})\.json$/.exec(r.path)?.[1];
    return sid ? { status: 200, body: { sid, status: 'active', friendly_name: 'Test account' } } : { status: 404, body: { code: 20404, message: 'The requested resource was not found' } };
  });
  return {
    ...server,
    conformance,
    close: async () => {
      await server.close();
      conformance.assertConforms();
    },
  };
}
