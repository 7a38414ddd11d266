/**
 * The requests the fakes let through although the provider's published OpenAPI refuses them:
 * each one named, with why, and with what removes it. Everything else a fake receives that
 * breaks the spec fails the test (fake-meta.ts, fake-twilio.ts; issue #46).
 *
 * Two kinds of entry:
 * - `gap`: the service's request is wrong by the provider's rules and a known gap of issue #46
 *   fixes it; the fix deletes the entry (test/unit/openapi-request-validator.test.ts fails on
 *   an entry that no longer matches what the service sends).
 * - `spec-defect`: Meta's schema contradicts Meta's own examples and documentation; the service
 *   follows the examples. Kept until Meta's spec changes.
 */
import type { RequestViolation, SpecRequest } from './openapi-request-validator';

export interface AllowedViolation {
  id: string;
  kind: 'gap' | 'spec-defect';
  /** Why it is let through, and what removes it. */
  reason: string;
  matches: (v: RequestViolation, req: SpecRequest) => boolean;
}

export const META_ALLOWED: AllowedViolation[] = [
  {
    id: 'spec-defect-template-language-policy',
    kind: 'spec-defect',
    reason:
      "Meta's LanguageObject schema requires `template.language.policy`, yet 8 of the spec's own template send examples (\"Send Message Template Text\", " +
      '"Send Sample Text Message", …) send `language: {code}` alone, and the send-message reference documents `policy` as optional ("deterministic", its only value, is the default).',
    matches: (v) => v.where === 'body/template/language' && v.rule === 'required' && v.message.includes('"policy"'),
  },
];

export const TWILIO_ALLOWED: AllowedViolation[] = [];

/** Splits violations into those that fail the test and those an entry lets through. */
export function applyAllowList(violations: RequestViolation[], req: SpecRequest, list: AllowedViolation[]) {
  const failing: RequestViolation[] = [];
  const allowed: Array<{ id: string; violation: RequestViolation }> = [];
  for (const v of violations) {
    const entry = list.find((e) => e.matches(v, req));
    if (entry) allowed.push({ id: entry.id, violation: v });
    else failing.push(v);
  }
  return { failing, allowed };
}
