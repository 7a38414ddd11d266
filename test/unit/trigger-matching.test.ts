import { languageMatches, messageMatches } from '../../src/modules/triggers/trigger-firing';

const cfg = (keywords: string[], o: { case_sensitive?: boolean; exact_match?: boolean } = {}) => ({
  keywords,
  case_sensitive: o.case_sensitive ?? false,
  exact_match: o.exact_match ?? false,
});

describe('message trigger matching', () => {
  it.each([
    ['contains the keyword as a word', cfg(['refund']), 'I want a refund please', true],
    ['case-insensitive by default', cfg(['refund']), 'REFUND now', true],
    ['not inside another word', cfg(['hi']), 'this is a thing', false],
    ['punctuation is a word boundary', cfg(['hello']), 'Hello, anyone?', true],
    ['a phrase matches across extra spaces', cfg(['order status']), 'what is my order   status', true],
    ['a phrase must be contiguous', cfg(['order status']), 'order my status', false],
    ['case-sensitive refuses another case', cfg(['Refund'], { case_sensitive: true }), 'refund', false],
    ['case-sensitive accepts the same case', cfg(['Refund'], { case_sensitive: true }), 'Refund!', true],
    ['exact match needs the whole message', cfg(['help'], { exact_match: true }), 'help me', false],
    ['exact match ignores outer punctuation and case', cfg(['help'], { exact_match: true }), '  Help! ', true],
    ['exact match of a phrase', cfg(['talk to agent'], { exact_match: true }), 'Talk to  agent', true],
    ['unicode words', cfg(['olá']), 'Olá, tudo bem?', true],
    ['regex characters are literal', cfg(['c++']), 'I code c++ daily', true],
    ['any keyword may match', cfg(['a1', 'b2']), 'b2', true],
  ])('%s', (_label, config, text, expected) => {
    expect(messageMatches(config, text)).toBe(expected);
  });

  it('matches languages when both sides carry one', () => {
    expect(languageMatches(undefined, 'fr')).toBe(true);
    expect(languageMatches('en', undefined)).toBe(true);
    expect(languageMatches('en', 'EN')).toBe(true);
    expect(languageMatches('en', 'en-GB')).toBe(true);
    expect(languageMatches('en-GB', 'en')).toBe(false);
    expect(languageMatches('en', 'fr')).toBe(false);
  });
});
