/**
 * What the fake providers do with every request they receive (issue #46): check it against
 * the provider's published OpenAPI (openapi-request-validator.ts), keep what breaks it, and
 * fail the test. A fake calls `check` as each request arrives and `assertConforms` when it
 * closes (tests close their fakes in afterAll, so a violation fails the file even when no
 * test looked); tests may also call `assertConforms` themselves to fail at the very test.
 * The named exceptions are in spec-allow-list.ts.
 */
import type { RecordedRequest } from './fake-http-server';
import { META_OPENAPI, type RequestViolation, TWILIO_OPENAPI, requestValidatorFor } from './openapi-request-validator';
import { type AllowedViolation, META_ALLOWED, TWILIO_ALLOWED, applyAllowList } from './spec-allow-list';

export interface RecordedViolation extends RequestViolation {
  /** The request line as received. */
  request: string;
}

const SPECS = {
  meta: {
    file: META_OPENAPI,
    name: "Meta's Business Messaging API v23.0",
    allow: META_ALLOWED,
    // What the service calls: the node read of the connection test, and the sends.
    operations: [
      ['GET', '/{Version}/{Phone-Number-ID}'],
      ['POST', '/{Version}/{Phone-Number-ID}/messages'],
    ],
  },
  twilio: {
    file: TWILIO_OPENAPI,
    name: "Twilio's REST API 2010-04-01",
    allow: TWILIO_ALLOWED,
    operations: [
      ['GET', '/2010-04-01/Accounts/{Sid}.json'],
      ['POST', '/2010-04-01/Accounts/{AccountSid}/Messages.json'],
      ['POST', '/2010-04-01/Accounts/{AccountSid}/Calls.json'],
    ],
  },
} as const;

const SEND_API_PATH = /^\/v\d+\.\d+\/(me|\d{1,64})\/messages$/;
const jsonOf = (raw: string): any => {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
};
/**
 * An Instagram (or Messenger) send: Meta's Send API `{recipient: {id}, message: {text}}`,
 * which the WhatsApp spec above does not describe. Sent to `/{page_id}/messages` or
 * `/me/messages` (Facebook Login, Page token) or `/{ig_id}/messages` on graph.instagram.com
 * (Instagram Login): https://developers.facebook.com/docs/messenger-platform/instagram/features/send-message/
 * and https://developers.facebook.com/docs/instagram-platform/instagram-api-with-instagram-login/messaging-api/
 */
const isSendApiRequest = (req: { method: string; path: string; raw: string }) =>
  req.method === 'POST' && /\/messages$/.test(req.path.split('?')[0]!) && jsonOf(req.raw)?.recipient !== undefined && jsonOf(req.raw)?.messaging_product === undefined;

function sendApiViolations(req: { path: string; raw: string; headers: { authorization?: string } }): RequestViolation[] {
  const operation = 'POST /{Version}/{Page-ID | me | IG-ID}/messages (Send API)';
  const found: RequestViolation[] = [];
  const body = jsonOf(req.raw);
  if (!SEND_API_PATH.test(req.path.split('?')[0]!)) found.push({ operation, where: 'path', rule: 'node', message: 'the node must be a page id, an Instagram account id or me' });
  if (typeof body?.recipient?.id !== 'string') found.push({ operation, where: 'body/recipient/id', rule: 'required', message: 'recipient.id must be the IGSID / PSID' });
  if (typeof body?.message?.text !== 'string' && body?.message?.attachment === undefined) found.push({ operation, where: 'body/message', rule: 'required', message: 'message.text or message.attachment is required' });
  if (!/^Bearer .+/.test(req.headers.authorization ?? '')) found.push({ operation, where: 'header/authorization', rule: 'required', message: 'a Bearer access token is required' });
  return found;
}

/** Starts checking a provider's requests; its schemas are compiled here, before any request waits on them. */
export function specConformance(provider: keyof typeof SPECS, allow: AllowedViolation[] = SPECS[provider].allow) {
  const spec = SPECS[provider];
  const validator = requestValidatorFor(spec.file, spec.name);
  for (const [method, template] of spec.operations) validator.prepare(method, template);
  const violations: RecordedViolation[] = [];
  const allowed: Array<{ id: string; violation: RecordedViolation }> = [];
  return {
    /** Requests that broke the spec (and no allow-list entry covers). */
    violations,
    /** Requests that broke the spec and an allow-list entry let through, by entry id. */
    allowed,
    check(r: RecordedRequest): void {
      const req = { method: r.method, path: r.path, headers: r.headers, raw: r.raw };
      const request = `${r.method} ${r.path.split('?')[0]}`;
      let checked: RequestViolation[];
      try {
        checked = provider === 'meta' && isSendApiRequest(req) ? sendApiViolations(req) : validator.validate(req);
      } catch (err) {
        // A validator failure must fail the test, not the fake's answer.
        checked = [{ operation: request, where: 'validator', rule: 'error', message: (err as Error).message }];
      }
      const found = applyAllowList(checked, req, spec.allow);
      violations.push(...found.failing.map((v) => ({ ...v, request })));
      allowed.push(...found.allowed.map((a) => ({ id: a.id, violation: { ...a.violation, request } })));
    },
    /** Throws, listing each violation (request, place, rule), when any request broke the spec. */
    assertConforms(): void {
      if (violations.length === 0) return;
      const lines = violations.map((v) => `  ${v.request}: ${v.where} [${v.rule}] ${v.message} (checked against ${v.operation})`);
      throw new Error(`requests the service sent break ${spec.name} (test/fixtures/, spec-allow-list.ts):\n${lines.join('\n')}`);
    },
  };
}
export type SpecConformance = ReturnType<typeof specConformance>;
