/**
 * Owns a voice execution's side of the call (workflow code): what the run has said so far,
 * the `voiceTurn` update that hands it to the voice hook, and the caller's hang-up.
 *
 * The run records each thing it says (`say`, `ask`) in order; items are rebuilt the same on
 * replay, so a worker that dies between two turns loses nothing. A turn returns when the
 * run waits for a reply it has not got (or has asked its question ahead of the prompt's
 * activity, VOICE_ASK_AHEAD), or has ended: the hook answers with the items from
 * the `from` it has rendered so far. Before the run completes, `finish` gives the hook a
 * moment to collect the last answer (a completed run takes no update).
 */
import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import type { CustomerReply, FormFieldSpec, NodeVoiceSpec } from '../executions.shared';
import { callEndedSignal, VOICE_FINAL_ANSWER_GRACE_MS, type VoiceItem, voiceTurnUpdate } from '../voice.shared';

export class VoiceCall {
  private readonly items: VoiceItem[] = [];
  private ended = false;
  private finalCollected = false;
  /** Twilio said the call is over: a waiting form ends with `caller_hung_up`. */
  hungUp = false;

  /**
   * Registers the handlers (before the run's first await: update-with-start delivers the
   * first turn in the first workflow task). `accept` takes a reply as the customerReply
   * signal does; `waiting` says the run waits for a reply (or its question is with the caller)
   * and has none queued.
   */
  install(accept: (reply: CustomerReply) => void, waiting: () => boolean): void {
    setHandler(voiceTurnUpdate, async ({ from, reply }) => {
      if (reply) accept(reply);
      await condition(() => this.ended || this.hungUp || waiting());
      const start = Math.max(0, Math.min(from, this.items.length));
      const items = this.items.slice(start);
      if (this.ended) this.finalCollected = true;
      return { items, next: start + items.length, ended: this.ended || this.hungUp };
    });
    setHandler(callEndedSignal, () => {
      this.hungUp = true;
    });
  }

  say(text: string, voice: NodeVoiceSpec | undefined): void {
    this.items.push({ kind: 'say', text, ...(voice ? { voice } : {}) });
  }

  ask(text: string, field: FormFieldSpec, voice: NodeVoiceSpec | undefined): void {
    this.items.push({ kind: 'ask', text, field: field.name, fieldType: field.type, ...(voice ? { voice } : {}) });
  }

  /** The run is over: waits (bounded) for the hook to collect the last answer, then for running turns to return. */
  async finish(): Promise<void> {
    this.ended = true;
    if (!this.hungUp) await condition(() => this.finalCollected || this.hungUp, VOICE_FINAL_ANSWER_GRACE_MS);
    await condition(allHandlersFinished);
  }
}
