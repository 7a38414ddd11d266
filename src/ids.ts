/** Owns resource identifiers: a type prefix (as Stripe does) plus 20 base62 characters from a CSPRNG. */
import { createHash, randomBytes } from 'node:crypto';

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
  webhookRecovery: 'whr',
  event: 'evt',
  customer: 'cus',
  message: 'msg',
  knowledgeBase: 'kb',
  article: 'art',
  application: 'app',
  user: 'usr',
  oauthClient: 'oac',
  export: 'exp',
  report: 'rpt',
  replay: 'rpl',
  dryRun: 'dry',
  channelConnection: 'chn',
  handoff: 'hof',
  debounceBurst: 'bst',
} as const;

export function newId(kind: keyof typeof ID_PREFIX): string {
  return `${ID_PREFIX[kind]}_${randomBase62(20)}`;
}

/**
 * An id of that kind derived from `parts` (SHA-256, base62): the same parts always give the
 * same id, so a re-run step that creates the row again hits its primary key instead of a twin.
 */
export function derivedId(kind: keyof typeof ID_PREFIX, ...parts: string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  // 32 bytes, 20 characters: the small modulo bias does not matter for an id that is not a secret.
  const body = Array.from(digest.subarray(0, 20), (b) => ALPHABET[b % 62]).join('');
  return `${ID_PREFIX[kind]}_${body}`;
}
