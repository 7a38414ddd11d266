/**
 * Owns how a turn becomes TwiML, with the twilio package's builder (it escapes and orders
 * the verbs as Twilio expects):
 * - a `say` item (message node, ai_response answer) → `<Say>`, with the node's `voice`;
 * - an `ask` item (a form field's prompt) → `<Gather input="speech dtmf" action=hook>`
 *   around its `<Say>`; digits end with `#` for number and nps fields, a rating takes one;
 *   a `<Redirect>` after it brings a silent caller back to the hook, which asks again;
 * - the execution's end → `<Hangup/>`;
 * - a turn that did not reach a wait in time → `<Pause length="1"/><Redirect>`.
 */
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse';
import type { VoiceItem } from '../../../../../temporal/voice.shared';

type SayAttributes = VoiceResponse.SayAttributes;

const sayAttributes = (item: VoiceItem): SayAttributes => ({
  ...(item.voice?.language ? { language: item.voice.language as SayAttributes['language'] } : {}),
  ...(item.voice?.voice ? { voice: item.voice.voice as SayAttributes['voice'] } : {}),
});

/** Keys and digit counts per field type: digits are how a phone keypad answers a score. */
function digitOptions(fieldType: string): Partial<VoiceResponse.GatherAttributes> {
  if (fieldType === 'rating') return { numDigits: 1 };
  if (fieldType === 'nps' || fieldType === 'number' || fieldType === 'phone') return { finishOnKey: '#' };
  return {};
}

export function turnTwiml(items: VoiceItem[], opts: { ended: boolean; hookUrl: string }): string {
  const response = new VoiceResponse();
  items.forEach((item, i) => {
    // Only the last prompt waits for the caller; an earlier one (said before a redirect) is just said.
    if (item.kind === 'ask' && i === items.length - 1 && !opts.ended) {
      const gather = response.gather({
        input: ['speech', 'dtmf'],
        action: opts.hookUrl,
        method: 'POST',
        speechTimeout: 'auto',
        ...digitOptions(item.fieldType),
        ...(item.voice?.language ? { language: item.voice.language as VoiceResponse.GatherAttributes['language'] } : {}),
      });
      gather.say(sayAttributes(item), item.text);
      response.redirect({ method: 'POST' }, opts.hookUrl);
    } else {
      response.say(sayAttributes(item), item.text);
    }
  });
  if (opts.ended) response.hangup();
  return response.toString();
}

/** The execution did not reach a wait within VOICE_ANSWER_BUDGET_MS: the caller hears a short pause, then the hook collects what was produced since. */
export function pauseTwiml(hookUrl: string): string {
  const response = new VoiceResponse();
  response.pause({ length: 1 });
  response.redirect({ method: 'POST' }, hookUrl);
  return response.toString();
}

/** A polite end: no voice workflow for this call, or the connection is disabled. */
export function goodbyeTwiml(text: string): string {
  const response = new VoiceResponse();
  response.say(text);
  response.hangup();
  return response.toString();
}

/** An empty answer (status callbacks: there is no one left to speak to). */
export const emptyTwiml = (): string => new VoiceResponse().toString();
