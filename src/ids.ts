/** Owns resource identifiers: a type prefix (as Stripe does) plus 20 base62 characters from a CSPRNG. */
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Unbiased base62: bytes ≥ 248 are rejected so every character is equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const ID_PREFIX = {
  organization: 'org',
  apiKey: 'key',
  workflow: 'wf',
  workflowRevision: 'wfrev',
  execution: 'exec',
  executionStep: 'step',
  trigger: 'trg',
  triggerExecution: 'trgexec',
  webhook: 'wh',
  webhookLog: 'whlog',
  event: 'evt',
  customer: 'cus',
  message: 'msg',
  knowledgeBase: 'kb',
  article: 'art',
} as const;

export function newId(kind: keyof typeof ID_PREFIX): string {
  return `${ID_PREFIX[kind]}_${randomBase62(20)}`;
}
