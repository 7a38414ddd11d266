/**
 * Owns what a phone call shares between the voice hook (src/modules/channels/providers/twilio_voice/) and the
 * execution workflow: the `voiceTurn` update and the `callEnded` signal, the shape of what
 * the execution says, and the reading of spoken form replies. Workflow code imports this
 * file, so it imports nothing but @temporalio/workflow.
 *
 * A call is synchronous: each Twilio request must be answered with everything the
 * execution says up to its next wait (or its end). `voiceTurn` (update-with-start for the
 * call's first request, a plain update per reply after) returns exactly that: the
 * execution's outbound items from `from` on, once the run waits for a reply or has ended.
 */
import { defineSignal, defineUpdate } from '@temporalio/workflow';
import type { CustomerReply, FormFieldSpec, NodeVoiceSpec } from './executions.shared';

/** One thing the execution says, in order: a message / ai_response answer, or a form field's prompt. */
export type VoiceItem = ({ kind: 'say'; text: string } | { kind: 'ask'; text: string; field: string; fieldType: FormFieldSpec['type'] }) & { voice?: NodeVoiceSpec };

export interface VoiceTurnInput {
  /** How many items the caller has been answered already (the hook keeps it per call). */
  from: number;
  /** The caller's reply to the last prompt, until an answer after it was rendered (idempotent: deduplicated by message id). */
  reply?: CustomerReply;
}

export interface VoiceTurnResult {
  /** The items from `from` on. */
  items: VoiceItem[];
  /** `from` + items.length: the next turn's `from`. */
  next: number;
  /** The execution has ended: the answer ends the call. */
  ended: boolean;
}

export const voiceTurnUpdate = defineUpdate<VoiceTurnResult, [VoiceTurnInput]>('voiceTurn');

/** Twilio's status callback said the call is over (`completed`, `busy`, `no-answer`, `failed`). */
export const callEndedSignal = defineSignal<[{ status: string }]>('callEnded');

/** The failed step's error type when the caller hangs up during a form: journeys show it as the drop-off reason. */
export const CALLER_HUNG_UP = 'caller_hung_up';

/**
 * How long an ended voice run waits for the hook to collect its last answer before it
 * completes (a completed run takes no update; the hook then reads the transcript instead).
 */
export const VOICE_FINAL_ANSWER_GRACE_MS = 30_000;

const NUMBER_WORDS: Record<string, string> = {
  zero: '0', oh: '0', one: '1', two: '2', three: '3', four: '4', for: '4', five: '5', six: '6', seven: '7', eight: '8', ate: '8', nine: '9', ten: '10',
};

/**
 * What a spoken reply means for a field: speech recognition writes "john at example dot
 * com", "five five five one two", "Four." The normalized text is then validated as any
 * reply (so an email that still does not parse is re-asked). Pure and deterministic.
 */
export function normalizeSpokenReply(type: FormFieldSpec['type'], text: string): string {
  const t = text.trim();
  if (type === 'email') {
    return t
      .toLowerCase()
      .replace(/[.!?,]+$/, '')
      .replace(/\s+(at|@)\s+/g, '@')
      .replace(/\s+(dot|point)\s+/g, '.')
      .replace(/\s+(underscore)\s+/g, '_')
      .replace(/\s+(dash|hyphen)\s+/g, '-')
      .replace(/\s+/g, '');
  }
  if (type === 'phone' || type === 'number' || type === 'rating' || type === 'nps') {
    const words = t.toLowerCase().replace(/[.!?,]+$/, '').split(/[\s-]+/);
    const mapped = words.map((w) => NUMBER_WORDS[w] ?? w);
    if (type === 'phone') {
      const digits = mapped.map((w) => (w === 'plus' ? '+' : w)).join('').replace(/[^+\d]/g, '');
      return digits === '' ? t : digits;
    }
    return mapped.join(' ');
  }
  return t;
}
