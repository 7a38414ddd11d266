/**
 * The example webhook bodies of Meta's own OpenAPI (`POST /whatsapp/webhooks`, vendored in
 * test/fixtures/meta-openapi/), read from the spec itself rather than copied, so an update of
 * the spec updates the replay tests (test/channels/meta-spec-examples.cases.ts); and the
 * bodies beyond the spec written from Meta's documentation (test/fixtures/meta-payloads/).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FIXTURES, META_OPENAPI, loadSpec } from './openapi-request-validator';

/** The spec's webhook examples by name ("Text Message", "Location Message", …), each a fresh copy. */
export function metaWebhookExamples(): Map<string, any> {
  const examples = loadSpec(META_OPENAPI).paths['/whatsapp/webhooks'].post.requestBody.content['application/json'].examples as Record<string, { value: unknown }>;
  return new Map(Object.entries(examples).map(([name, e]) => [name, structuredClone(e.value)]));
}

/** The example as Meta would send it to the test's connection: only `metadata.phone_number_id` is rewritten. */
export function toPhoneNumber(body: any, phoneNumberId: string): any {
  const copy = structuredClone(body);
  for (const entry of copy.entry ?? []) for (const change of entry.changes ?? []) if (change.value?.metadata) change.value.metadata.phone_number_id = phoneNumberId;
  return copy;
}

/** The first `messages[]` item of an example. */
export const firstMessage = (body: any): any => body.entry[0].changes[0].value.messages?.[0];

/** A webhook body written from Meta's documentation (test/fixtures/meta-payloads/README.md names each page), a fresh copy. */
export function metaDocumentedPayload(file: string): any {
  return JSON.parse(readFileSync(path.join(FIXTURES, 'meta-payloads', file), 'utf8'));
}
