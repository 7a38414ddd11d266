/** How a spoken form reply is read before validation (temporal/voice.shared.ts), and what the TwiML builder makes of a turn. */
import { validateFormReply } from '../../temporal/executions.shared';
import { normalizeSpokenReply } from '../../temporal/voice.shared';
import { pauseTwiml, turnTwiml } from '../../src/modules/channels/providers/twilio_voice/voice-twiml';
import { parseTwiml } from '../helpers/fake-twilio';

const field = (type: 'email' | 'phone' | 'rating' | 'nps' | 'number' | 'text') => ({ name: 'f', type, required: true, label: 'F?' });
const check = (type: Parameters<typeof field>[0], speech: string) => validateFormReply(field(type), normalizeSpokenReply(type, speech));

describe('spoken form replies', () => {
  it('reads emails spelled out by speech recognition, and leaves a misheard one invalid', () => {
    expect(check('email', 'Ana at example dot com.')).toEqual({ value: 'ana@example.com' });
    expect(check('email', 'first dot last at mail dot example dot org')).toEqual({ value: 'first.last@mail.example.org' });
    expect(check('email', 'ana@example.com')).toEqual({ value: 'ana@example.com' });
    expect(check('email', 'ana at example')).toEqual({ problem: 'That does not look like an email address' });
  });

  it('reads numbers and phone numbers said as words, and digits as they are', () => {
    expect(check('rating', 'Four.')).toEqual({ value: '4' });
    expect(check('rating', '4')).toEqual({ value: '4' });
    expect(check('nps', 'ten')).toEqual({ value: '10' });
    expect(check('rating', 'nine')).toEqual({ problem: 'Please answer with a whole number from 1 to 5' });
    expect(check('phone', 'plus one four one five five five five zero one two three')).toEqual({ value: '+14155550123' });
    expect(check('text', 'Ana Diaz')).toEqual({ value: 'Ana Diaz' });
  });
});

describe('TwiML of a turn', () => {
  const hook = 'https://api.example.com/hooks/voice/chn_x';
  it('says, then gathers the last prompt with a redirect after it; the end hangs up; XML is escaped', () => {
    const verbs = parseTwiml(
      turnTwiml(
        [
          { kind: 'say', text: 'Fish & chips <today>', voice: { language: 'en-GB', voice: 'Polly.Amy' } },
          { kind: 'ask', text: 'Rate us', field: 'score', fieldType: 'rating' },
        ],
        { ended: false, hookUrl: hook },
      ),
    );
    expect(verbs.map((v) => v.name)).toEqual(['Say', 'Gather', 'Redirect']);
    expect(verbs[0]).toMatchObject({ text: 'Fish & chips <today>', attrs: { language: 'en-GB', voice: 'Polly.Amy' } });
    expect(verbs[1]).toMatchObject({ attrs: { input: 'speech dtmf', action: hook, method: 'POST', numDigits: '1' } });
    expect(verbs[2]).toMatchObject({ text: hook, attrs: { method: 'POST' } });
    expect(parseTwiml(turnTwiml([{ kind: 'say', text: 'Bye' }], { ended: true, hookUrl: hook })).map((v) => v.name)).toEqual(['Say', 'Hangup']);
    expect(parseTwiml(pauseTwiml(hook))).toMatchObject([{ name: 'Pause', attrs: { length: '1' } }, { name: 'Redirect', text: hook }]);
  });
});
