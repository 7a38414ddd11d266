/**
 * Owns the send of `twilio_messaging` connections: `POST {TWILIO_API_URL}/2010-04-01/Accounts/
 * {AccountSid}/Messages.json`, form-encoded, HTTP basic auth with the Account SID and Auth
 * Token; Twilio answers 201 with the Message resource (`sid`). Plain fetch, as Twilio's other
 * call (twilio_voice/twilio-api.ts): the twilio package's REST client would bring its own
 * HTTP stack for one POST. Twilio's refusals are `{code, message, more_info, status}`
 * (https://www.twilio.com/docs/usage/twilios-response#response-formats-exceptions).
 */
import { PROVIDER_USER_AGENT } from '../../../../http/user-agent';

export interface TwilioMessagesCall {
  baseUrl: string;
  accountSid: string;
  authToken: string;
  timeoutMs: number;
}

/** A refused or failed send: Twilio's HTTP status (0: no answer) and error code. */
export class TwilioError extends Error {
  constructor(
    readonly status: number,
    readonly code: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'TwilioError';
  }
}

/** Creates a Message; resolves with its SID. */
export async function createTwilioMessage(call: TwilioMessagesCall, params: URLSearchParams): Promise<string> {
  const url = `${call.baseUrl.replace(/\/$/, '')}/2010-04-01/Accounts/${encodeURIComponent(call.accountSid)}/Messages.json`;
  let res: Response;
  let body: { sid?: unknown; code?: unknown; message?: unknown } | undefined;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${call.accountSid}:${call.authToken}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        'user-agent': PROVIDER_USER_AGENT,
      },
      body: params.toString(),
      signal: AbortSignal.timeout(call.timeoutMs),
      redirect: 'manual',
    });
    body = (await res.json().catch(() => undefined)) as typeof body;
  } catch (err) {
    throw new TwilioError(0, undefined, `Twilio did not answer: ${(err as Error).message}`);
  }
  if (res.ok && typeof body?.sid === 'string') return body.sid;
  const code = typeof body?.code === 'number' ? body.code : undefined;
  const message = typeof body?.message === 'string' ? body.message.slice(0, 500) : res.ok ? 'Twilio answered without a message SID' : `Twilio answered ${res.status}`;
  throw new TwilioError(res.status, code, code ? `${message} (Twilio error ${code})` : message);
}
