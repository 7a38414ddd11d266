/**
 * The customer's id and Twilio's address for it. SMS: the E.164 number as Twilio writes it
 * (`+14155550123`). WhatsApp: Twilio writes `whatsapp:+14155550123`; the customer is the
 * digits (`14155550123`, Meta's `wa_id`), the same id a `whatsapp_cloud` connection gives the
 * same person.
 */
const WHATSAPP_PREFIX = 'whatsapp:';

export const customerIdOf = (channel: string, address: string): string =>
  channel === 'whatsapp' ? address.replace(WHATSAPP_PREFIX, '').replace(/^\+/, '') : address;

export function addressOf(channel: string, id: string): string {
  const number = id.startsWith(WHATSAPP_PREFIX) ? id.slice(WHATSAPP_PREFIX.length) : id;
  const e164 = /^\d+$/.test(number) ? `+${number}` : number;
  return channel === 'whatsapp' ? `${WHATSAPP_PREFIX}${e164}` : e164;
}
