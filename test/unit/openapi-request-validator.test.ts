/**
 * The request validator the fake Meta and Twilio servers run (test/helpers/openapi-request-validator.ts)
 * is itself checked against the providers' own material: every request example Meta's spec
 * gives for the send operation passes it, and requests that break a rule of the spec are
 * reported with the operation, the place and the rule.
 */
import { META_OPENAPI, type RequestViolation, TWILIO_OPENAPI, loadSpec, requestValidatorFor } from '../helpers/openapi-request-validator';
import { META_ALLOWED, applyAllowList } from '../helpers/spec-allow-list';

const meta = requestValidatorFor(META_OPENAPI);
const twilio = requestValidatorFor(TWILIO_OPENAPI);
const SEND = '/{Version}/{Phone-Number-ID}/messages';
const json = { authorization: 'Bearer EAAG-token', 'content-type': 'application/json' };
const form = { authorization: `Basic ${Buffer.from('ACx:token').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' };
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef';
const rules = (v: RequestViolation[]) => v.map((x) => `${x.where} ${x.rule}`);
const sendText = (body: unknown, path = '/v23.0/106540352242922/messages', headers: Record<string, string> = json) =>
  meta.validate({ method: 'POST', path, headers, raw: JSON.stringify(body) });

describe("Meta's Business Messaging OpenAPI", () => {
  const examples = Object.entries(loadSpec(META_OPENAPI).paths[SEND].post.requestBody.content['application/json'].examples as Record<string, { value: unknown }>);

  // The examples of what the service sends (text, list, reply buttons, plain templates). Other
  // examples contradict the schema in places the service never sends (media placeholders that
  // are not URLs, string coordinates, template button indexes): not the validator's concern.
  const SERVICE_KINDS = ['Send Text Message', 'Send Reply to Text Message', 'Send List Message', 'Send Reply Button', 'Send Message Template Text', 'Send Sample Text Message'];
  it.each(examples.filter(([name]) => SERVICE_KINDS.includes(name)).map(([name, e]) => [name, e.value]))("accepts the spec's own send example %s", (_name, value) => {
    const req = { method: 'POST', path: '/v23.0/106540352242922/messages', headers: json, raw: JSON.stringify(value) };
    const { failing, allowed } = applyAllowList(meta.validate(req), req, META_ALLOWED);
    expect(failing).toEqual([]);
    // Only the documented contradiction between Meta's schema and its own template examples.
    expect(allowed.map((a) => a.id).every((id) => id === 'spec-defect-template-language-policy')).toBe(true);
  });

  it('accepts the text, template and list sends the service makes today (meta-graph.ts), at any Graph version', () => {
    const base = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '15550100001' };
    expect(sendText({ ...base, type: 'text', text: { body: 'Hi' } }, '/v21.0/106540352242922/messages')).toEqual([]);
    expect(
      sendText({ ...base, type: 'interactive', interactive: { type: 'list', body: { text: 'Rate us' }, action: { button: 'Choose', sections: [{ title: 'Choose', rows: [{ id: '5', title: '5' }] }] } } }),
    ).toEqual([]);
  });

  it('reports a property the spec does not have, a missing one, an unknown message type, missing credentials and a wrong content type', () => {
    const base = { messaging_product: 'whatsapp', recipient_type: 'individual', to: '15550100001' };
    expect(rules(sendText({ ...base, type: 'text', text: { body: 'Hi', color: 'red' } }))).toEqual(['body/text additionalProperties']);
    expect(rules(sendText({ messaging_product: 'whatsapp', recipient_type: 'individual', type: 'text', text: { body: 'Hi' } }))).toEqual(['body required']);
    expect(rules(sendText({ ...base, type: 'carrier_pigeon' }))).toEqual(['body/type discriminator']);
    expect(rules(sendText({ ...base, type: 'text', text: { body: 'Hi' } }, undefined, { 'content-type': 'application/json' }))).toEqual([
      'header.Authorization required',
      'header.authorization security',
    ]);
    expect(rules(sendText({ ...base, type: 'text', text: { body: 'Hi' } }, undefined, { ...json, 'content-type': 'text/plain' }))).toEqual([
      'header.Content-Type enum',
      'header.content-type content-type',
    ]);
    const unknown = meta.validate({ method: 'DELETE', path: '/v23.0/106540352242922/messages', headers: json, raw: '' });
    expect(rules(unknown)).toEqual(['path operation']);
  });

  it('reads a node with a bearer token: valid for one of the templates a bare node id matches', () => {
    expect(meta.validate({ method: 'GET', path: '/v23.0/106540352242922', headers: { authorization: 'Bearer t' }, raw: '' })).toEqual([]);
    expect(rules(meta.validate({ method: 'GET', path: '/v23.0/106540352242922', headers: {}, raw: '' }))).toContain('header.authorization security');
  });
});

describe("Twilio's REST API OpenAPI", () => {
  const path = (p: string) => `/2010-04-01/Accounts/${ACCOUNT}${p}`;

  it('accepts the account read of the connection test, and form-encoded Messages and Calls creates', () => {
    expect(twilio.validate({ method: 'GET', path: `/2010-04-01/Accounts/${ACCOUNT}.json`, headers: { authorization: form.authorization }, raw: '' })).toEqual([]);
    const sms = new URLSearchParams({ To: '+15550100001', From: '+15550100100', Body: 'Hi', StatusCallback: 'https://example.com/hooks/status' }).toString();
    expect(twilio.validate({ method: 'POST', path: path('/Messages.json'), headers: form, raw: sms })).toEqual([]);
    const call = new URLSearchParams({ To: '+15550100001', From: '+15550100100', Url: 'https://example.com/twiml', Timeout: '30' }).toString();
    expect(twilio.validate({ method: 'POST', path: path('/Calls.json'), headers: form, raw: call })).toEqual([]);
  });

  it('reports a malformed account SID, a non-integer Timeout, a missing From, JSON instead of a form, and no basic credentials', () => {
    expect(rules(twilio.validate({ method: 'GET', path: '/2010-04-01/Accounts/AC123.json', headers: { authorization: form.authorization }, raw: '' }))).toEqual([
      'path.Sid minLength',
      'path.Sid pattern',
    ]);
    const call = new URLSearchParams({ To: '+15550100001', Url: 'https://example.com/twiml', Timeout: 'soon' }).toString();
    expect(rules(twilio.validate({ method: 'POST', path: path('/Calls.json'), headers: form, raw: call }))).toEqual(['body required', 'body/Timeout type']);
    const asJson = twilio.validate({ method: 'POST', path: path('/Messages.json'), headers: { ...form, 'content-type': 'application/json' }, raw: '{"To":"+1"}' });
    expect(rules(asJson)).toEqual(['header.content-type content-type']);
    expect(rules(twilio.validate({ method: 'GET', path: `/2010-04-01/Accounts/${ACCOUNT}.json`, headers: { authorization: 'Bearer x' }, raw: '' }))).toEqual([
      'header.authorization security',
    ]);
  });
});
