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
        checked = validator.validate(req);
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
