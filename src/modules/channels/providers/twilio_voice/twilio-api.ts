/**
 * Owns the one call to Twilio's REST API: the account read of `POST /v1/channels/{id}/test`
 * for `twilio_voice` connections (`GET {TWILIO_API_URL}/2010-04-01/Accounts/{sid}.json`,
 * HTTP basic auth with the Account SID and Auth Token). Plain fetch, as every outbound call
 * of the service: the twilio package's REST client would bring its own HTTP stack for one GET.
 */
import { PROVIDER_USER_AGENT } from '../../../../http/user-agent';

export interface TwilioAccountCall {
  baseUrl: string;
  accountSid: string;
  authToken: string;
  timeoutMs: number;
}

export async function fetchTwilioAccount(call: TwilioAccountCall): Promise<{ ok: boolean; status_code: number; error_message: string | null }> {
  const url = `${call.baseUrl.replace(/\/$/, '')}/2010-04-01/Accounts/${encodeURIComponent(call.accountSid)}.json`;
  try {
    const res = await fetch(url, {
      headers: { authorization: `Basic ${Buffer.from(`${call.accountSid}:${call.authToken}`).toString('base64')}`, accept: 'application/json', 'user-agent': PROVIDER_USER_AGENT },
      signal: AbortSignal.timeout(call.timeoutMs),
      redirect: 'manual',
    });
    const body = (await res.json().catch(() => undefined)) as { message?: unknown; status?: unknown } | undefined;
    if (res.ok) {
      // A suspended or closed account answers 200 too: it cannot take calls.
      const status = typeof body?.status === 'string' ? body.status : 'active';
      return status === 'active' ? { ok: true, status_code: res.status, error_message: null } : { ok: false, status_code: res.status, error_message: `the Twilio account is ${status}` };
    }
    const message = typeof body?.message === 'string' ? body.message.slice(0, 500) : `Twilio answered ${res.status}`;
    return { ok: false, status_code: res.status, error_message: message };
  } catch (err) {
    return { ok: false, status_code: 0, error_message: `Twilio did not answer: ${(err as Error).message}` };
  }
}
