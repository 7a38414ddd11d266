/** The config of `twilio_voice` channel connections (`/v1/channels`), and the voice workflow trigger. */
import { z } from '../../../../http/zod';

export const AccountSid = z
  .string()
  .trim()
  .regex(/^AC[0-9a-fA-F]{32}$/, "account_sid must be Twilio's Account SID (AC followed by 32 hex digits)")
  .openapi({ example: 'ACa1b2c3d4e5f60718293a4b5c6d7e8f90' });
export const PhoneNumber = z
  .string()
  .trim()
  .regex(/^\+[1-9]\d{6,14}$/, 'phone_number must be E.164: + then 7 to 15 digits')
  .openapi({ example: '+14155550100' });
const AuthToken = z
  .string()
  .min(1)
  .max(4096)
  .openapi({ description: "The account's Auth Token: X-Twilio-Signature of every call request is checked with it. Write-only: never returned." });

export const TwilioVoiceConfig = z.strictObject({ account_sid: AccountSid, auth_token: AuthToken, phone_number: PhoneNumber });
